import pino, { type Logger } from 'pino';

/** Secrets never reach a log line: tokens, cookies, passwords. */
export function createLogger(level: string): Logger {
  return pino({
    level,
    redact: {
      paths: ['req.headers.authorization', 'req.headers.cookie', 'req.headers["x-api-key"]', 'res.headers["set-cookie"]', '*.password', '*.token'],
      censor: '[redacted]',
    },
    ...(process.stdout.isTTY ? { transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss' } } } : {}),
  });
}
