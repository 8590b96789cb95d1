#!/usr/bin/env node
// Package bin: the compiled command line (built by `npm ci` through the prepare script, or `npm run build`).
import './check-node.js'; // Node 24 or a clear refusal, before the program loads
import('../dist/api/src/cli/portico.js');
