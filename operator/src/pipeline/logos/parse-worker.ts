// The artwork parser's worker thread (started by parse-pool.ts from the compiled parse-worker.js beside it).
import { PARSE_OPS, serveParseOps } from './parse-ops.js';

serveParseOps(PARSE_OPS);
