// The command table's shape. Parsing, help and shell completion are all
// derived from one tree of CommandSpecs, so they cannot disagree.

/** What a shell may offer for a flag value or positional argument. */
export type CompletionSource =
  | { kind: 'none' }
  | { kind: 'file' }
  | { kind: 'choices'; values: readonly string[] }
  /** Looked up in the cluster at completion time (best effort, short timeout). */
  | { kind: 'namespace' }
  | { kind: 'pod' }
  | { kind: 'context' };

export interface FlagSpec {
  /** Long name without the dashes. */
  name: string;
  /** One letter, without the dash. */
  short?: string;
  /** `strings` may be repeated; every value is kept in order. */
  type: 'string' | 'boolean' | 'strings';
  description: string;
  /** Placeholder in help, e.g. `ns` for `--namespace <ns>`. */
  valueName?: string;
  /** Shown in help only; commands apply their own defaults. */
  defaultText?: string;
  complete?: CompletionSource;
}

export interface ParsedFlags {
  string(name: string): string | undefined;
  boolean(name: string): boolean;
  strings(name: string): string[];
  /** Whether the flag was given at all (to tell an explicit value from a default). */
  has(name: string): boolean;
}

export interface Io {
  out(text: string): void;
  err(text: string): void;
  env: Record<string, string | undefined>;
  /** Aborted on Ctrl-C; long-running commands (dashboard, install --wait) stop on it. */
  signal: AbortSignal;
}

export interface RunContext {
  /** `skein namespace add`, for messages. */
  commandPath: string;
  flags: ParsedFlags;
  args: string[];
  io: Io;
}

/**
 * Another form of a command's positional arguments, chosen by a flag
 * (`policy check <src-pod> --to <url>`): usage, completion and the argument
 * count follow it whenever that flag is given.
 */
export interface ArgsForm {
  /** A value flag (completion sees only those); the form applies when it is given. */
  flag: string;
  /** The form's usage, flag included: `<src-pod> --to <url>`. */
  argsUsage: string;
  argsComplete: readonly CompletionSource[];
  minArgs: number;
  maxArgs: number;
}

export interface CommandSpec {
  name: string;
  /** One line for command lists. */
  summary: string;
  /** Longer help text, shown by --help. */
  description?: string;
  /** Positional arguments in usage lines, e.g. `<src-pod> <dst-pod>`. */
  argsUsage?: string;
  /** Completion for positional arguments by index; the last one repeats. */
  argsComplete?: readonly CompletionSource[];
  /** Bounds on positional arguments (checked before run). */
  minArgs?: number;
  maxArgs?: number;
  /** Alternative forms; the first whose flag is given replaces the four fields above. */
  argsForms?: readonly ArgsForm[];
  flags?: readonly FlagSpec[];
  subcommands?: readonly CommandSpec[];
  examples?: readonly string[];
  /** Exit code. Leaf commands have one; groups print their help. */
  run?: (ctx: RunContext) => Promise<number>;
  /** Not listed in help or completion (e.g. `__complete`). */
  hidden?: boolean;
}
