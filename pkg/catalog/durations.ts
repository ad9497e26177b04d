// Checks of the Go-style durations policies carry, as problems naming the field.
import { parseDuration } from '../mesh/duration.js';

/** Why `text` cannot be an Envoy Duration, or undefined when it can (or is absent). */
export function durationProblem(
  field: string,
  text: string | undefined,
  positive: boolean,
): string | undefined {
  if (text === undefined) return undefined;
  try {
    const ms = parseDuration(text);
    if (positive && ms <= 0) return `${field}: must be longer than 0`;
    // Envoy's Duration holds whole nanoseconds; anything finer would be rounded away.
    if (!Number.isInteger(ms * 1e6)) return `${field}: finer than a nanosecond`;
  } catch (err) {
    return `${field}: ${err instanceof Error ? err.message : String(err)}`;
  }
  return undefined;
}
