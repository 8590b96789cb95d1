#!/usr/bin/env node
// Package bin: the compiled catalog operator command line.
import('../dist/operator/src/cli.js');
