// The controller's log level at runtime (MeshConfig spec.observability.logLevel).
// Precedence: --log-level, given on the command line, pins the level for the
// process; otherwise the MeshConfig's level is in force while set, and without
// one the startup level (SKEIN_LOG_LEVEL, else info). The chart passes its
// `logLevel` value as SKEIN_LOG_LEVEL and MeshConfig, so edits apply. The
// registries refuse a MeshConfig whose level is not one of these (the CRD's
// enum: a problem naming the MeshConfig, its last valid version stays), so a
// bad value cannot arrive here; it is checked again and then changes nothing.
import type { Logger } from '../logger/logger.js';

/** pino's levels, as the CRD's enum lists them. */
export const CONTROLLER_LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const;
export type ControllerLogLevel = (typeof CONTROLLER_LOG_LEVELS)[number];

export function isControllerLogLevel(v: unknown): v is ControllerLogLevel {
  return CONTROLLER_LOG_LEVELS.some((l) => l === v);
}

/** The level to be in force: the MeshConfig's when set and valid, the startup level when unset, else `current`. */
export function logLevelFor(configured: unknown, startup: string, current: string): string {
  if (configured === undefined) return startup;
  return isControllerLogLevel(configured) ? configured : current;
}

/**
 * Applies the MeshConfig's level to the process logger. Child loggers that set
 * no level of their own follow their parent's (pino's children are created
 * from their parent's prototype), so the root's level is the one to change.
 */
export class LogLevelFollower {
  private readonly startup: string;
  private overriddenSaid: unknown;

  /** `pinned`: --log-level was given; the MeshConfig's level is then only reported as overridden. */
  constructor(
    private readonly log: Logger,
    private readonly pinned = false,
  ) {
    this.startup = log.level;
  }

  /** `configured`: spec.observability.logLevel of the MeshConfig in force (undefined: none). */
  follow(configured: unknown): void {
    const current = this.log.level;
    if (this.pinned) {
      // Said once per MeshConfig value, so an operator sees why an edit did nothing.
      if (configured !== undefined && configured !== current && configured !== this.overriddenSaid)
        this.log.info(
          { meshConfig: configured, pinned: current },
          'MeshConfig log level overridden by --log-level',
        );
      this.overriddenSaid = configured;
      return;
    }
    const next = logLevelFor(configured, this.startup, current);
    if (configured !== undefined && next === current && !isControllerLogLevel(configured))
      this.log.warn(
        { field: 'observability.logLevel', value: configured, inForce: current },
        'MeshConfig log level ignored: not a level',
      );
    if (next === current) return;
    // Said once, under whichever of the two levels shows info lines.
    const info = this.log.levels.values['info'] ?? 30;
    const shows = (level: string) => (this.log.levels.values[level] ?? 0) <= info;
    const say = () => this.log.info({ from: current, to: next }, 'log level changed by the MeshConfig');
    if (shows(current)) say();
    this.log.level = next;
    if (!shows(current) && shows(next)) say();
  }
}
