// Portico's version, from the package it ships in (user agents, /openapi.json).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from './infra/repo-root.js';

export const PORTICO_VERSION: string = (
  JSON.parse(readFileSync(path.join(repoRoot(), 'package.json'), 'utf8')) as { version: string }
).version;
