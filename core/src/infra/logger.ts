import { pino, type Logger } from 'pino';
import type { LogLevel } from '../config.js';

/** JSON logs on stdout. Credentials never reach a log line: anything that looks like one is redacted. */
export function createLogger(level: LogLevel, service: 'portico-api' | 'portico-operator'): Logger {
  return pino({
    level,
    base: { service },
    redact: {
      paths: [
        'key',
        'token',
        'secret',
        'authorization',
        '*.key',
        '*.token',
        '*.secret',
        '*.authorization',
        'req.headers.authorization',
        'headers.authorization',
      ],
      censor: '[redacted]',
    },
  });
}
