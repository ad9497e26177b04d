import { type Logger, pino } from 'pino';

export type { Logger };

/**
 * The process logger: JSON lines, or pretty output when attached to a terminal.
 * Level: `level`, else SKEIN_LOG_LEVEL, else info. The controller's MeshConfig
 * (observability.logLevel) may change it at runtime (pkg/controller/log-level.ts).
 */
export function createLogger(options: { level?: string; pretty?: boolean } = {}): Logger {
  const level = options.level ?? process.env['SKEIN_LOG_LEVEL'] ?? 'info';
  const pretty = options.pretty ?? process.stdout.isTTY === true;
  if (pretty) {
    return pino({
      level,
      transport: { target: 'pino-pretty', options: { colorize: true, translateTime: 'HH:MM:ss.l' } },
    });
  }
  return pino({ level });
}

/** A logger that drops everything, for tests. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
