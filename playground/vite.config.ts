// The playground's build (tools/build_playground.py runs `vite build` here, in playground/).
// Fixed file names: the reference server serves each file as its own route (reference_server/playground.py).
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

export default defineConfig({
  base: '/playground/', // absolute asset URLs: the page is served at /playground and /playground/
  plugins: [react()],
  publicDir: false,
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    cssCodeSplit: false,
    modulePreload: { polyfill: false }, // one script, nothing to preload; no inline code for the page's CSP
    assetsInlineLimit: 0,
    reportCompressedSize: false,
    rolldownOptions: {
      output: {
        codeSplitting: false,
        entryFileNames: 'assets/playground.js',
        assetFileNames: 'assets/playground[extname]',
      },
    },
  },
});
