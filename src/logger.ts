import pino, { type Logger } from 'pino';

/**
 * Errors are logged by type, code and message only: no stack trace, and none of the SQL text or
 * bound parameters that driver errors carry (they can hold personal data).
 */
export function safeError(err: unknown): Record<string, unknown> {
  if (!(err instanceof Error)) return { type: typeof err };
  const code = (err as { code?: unknown }).code;
  return { type: err.name, ...(typeof code === 'string' ? { code } : {}), message: err.message.slice(0, 300) };
}

/** Paths whose last part is a secret: a password reset link's token. */
const SECRET_PATHS = /^(\/reset)\/[^/]+/u;

/**
 * A request's path as logged: no query string (a dashboard search puts a plate there), and no
 * secret the path itself carries (`/reset/[redacted]`).
 */
export const loggedPath = (url: string): string => url.split('?')[0]!.replace(SECRET_PATHS, '$1/[redacted]');

/** Secrets never reach a log line: tokens, cookies, passwords. `destination` defaults to stdout. */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  const options: pino.LoggerOptions = {
    level,
    serializers: {
      err: safeError,
      error: safeError,
      req: (req: { method?: string; url?: string; remoteAddress?: string }) => ({
        method: req.method,
        url: req.url === undefined ? undefined : loggedPath(req.url),
        remoteAddress: req.remoteAddress,
      }),
    },
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers.cookie',
        'req.headers["x-api-key"]',
        // Any other object's headers (at trace level, @fastify/multipart logs the busboy options with the request's).
        '*.headers.authorization',
        '*.headers.cookie',
        'res.headers["set-cookie"]',
        '*.password',
        '*.token',
      ],
      censor: '[redacted]',
    },
  };
  if (destination) return pino(options, destination);
  return pino({
    ...options,
    ...(process.stdout.isTTY ? { transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss' } } } : {}),
  });
}
