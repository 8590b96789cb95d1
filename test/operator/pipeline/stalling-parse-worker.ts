// A parse worker for the deadline's tests: the real operations, except that sniffing bytes that start with
// `stall` never returns (a busy loop, as catastrophic backtracking would be) and `crash` ends the thread.
import { PARSE_OPS, serveParseOps } from '../../../operator/src/pipeline/logos/parse-ops.js';

serveParseOps({
  ...PARSE_OPS,
  sniff: (bytes: Uint8Array) => {
    const start = Buffer.from(bytes.subarray(0, 5)).toString('latin1');
    if (start === 'stall') for (;;);
    if (start === 'crash') process.exit(3);
    return PARSE_OPS.sniff(bytes);
  },
});
