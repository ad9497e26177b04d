import { createLogger, type Logger } from '../logger/logger.js';

let fallback: Logger | undefined;

// One shared plain JSON logger for components constructed without one; never
// the pretty transport, which would start a worker thread per process.
export function defaultLogger(): Logger {
  fallback ??= createLogger({ pretty: false });
  return fallback;
}
