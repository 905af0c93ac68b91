// Imported first, before anything that loads `ai`: `ai` checks the stream's chunks with zod, which would first try
// `new Function` to compile its parsers. The page's Content-Security-Policy (reference_server/playground.py) forbids
// that, and the attempt would only log a violation; zod's interpreted parsers need no eval.
import { config } from 'zod/v4';

config({ jitless: true });
