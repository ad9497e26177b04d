/**
 * An error the user can act on: printed as `skein: <message>` without a stack
 * trace. Exit code 2 unless a command says otherwise (policy check uses 1 for DENIED).
 */
export class CliError extends Error {
  override name = 'CliError';
  constructor(
    message: string,
    readonly exitCode = 2,
  ) {
    super(message);
  }
}

/** Wrong flags or arguments: printed with a pointer to the command's --help. */
export class UsageError extends CliError {
  override name = 'UsageError';
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
