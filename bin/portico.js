#!/usr/bin/env node
// Package bin: the compiled command line (built by `npm ci` through the prepare script, or `npm run build`).
import('../dist/api/src/cli/portico.js');
