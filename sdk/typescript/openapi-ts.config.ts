import { defineConfig } from '@hey-api/openapi-ts';

// tools/generate_typescript_sdk.py runs this (`python3 tasks.py sdk`), with COPILOT_SDK_INPUT set to a copy derived
// afresh from spec/ and, for --check, COPILOT_SDK_OUTPUT to a temporary folder. Run by hand, it reads the copy in
// generated/ and writes src/generated/.
export default defineConfig({
  input: process.env.COPILOT_SDK_INPUT ?? '../../generated/openapi-3.1.yaml',
  // `.js` in every relative import, as Node's ESM resolution (tsconfig `module: NodeNext`) needs them in the emitted
  // JavaScript: the package is built by `tsc` and used by plain Node as well as bundlers.
  output: { path: process.env.COPILOT_SDK_OUTPUT ?? 'src/generated', module: { extension: '.js' } },
  logs: { level: 'warn', file: false },
  plugins: ['@hey-api/client-fetch', '@hey-api/typescript', '@hey-api/sdk'],
});
