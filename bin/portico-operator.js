#!/usr/bin/env node
// Package bin: the compiled catalog operator command line.
import './check-node.js'; // Node 24 or a clear refusal, before the program loads
import('../dist/operator/src/cli.js');
