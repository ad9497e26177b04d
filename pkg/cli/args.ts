// Argument parsing for the command tree: words select subcommands until the
// first positional argument; flags may appear anywhere (also before the
// subcommand that defines them), in kubectl's forms `--name value`,
// `--name=value`, `-n value`, `-n=value` and `-nvalue`. `--` ends flags.
import { UsageError } from './errors.js';
import type { ArgsForm, CommandSpec, FlagSpec, ParsedFlags } from './spec.js';

export interface Resolved {
  /** Root first, the selected command last. */
  path: CommandSpec[];
  flags: ParsedFlags;
  args: string[];
  /** -h/--help was given somewhere. */
  help: boolean;
}

export const HELP_FLAG: FlagSpec = { name: 'help', short: 'h', type: 'boolean', description: 'Show help' };

/** Every flag in the tree by long name, plus the global ones. Throws on a name used with two types. */
export function flagIndex(root: CommandSpec, globals: readonly FlagSpec[]): Map<string, FlagSpec> {
  const index = new Map<string, FlagSpec>();
  const add = (f: FlagSpec, where: string) => {
    const seen = index.get(f.name);
    if (seen && (seen.type !== f.type || seen.short !== f.short))
      throw new Error(`flag --${f.name} is defined twice with different types or shorthands (${where})`);
    index.set(f.name, f);
  };
  for (const f of [HELP_FLAG, ...globals]) add(f, 'global');
  const walk = (c: CommandSpec) => {
    for (const f of c.flags ?? []) add(f, c.name);
    for (const s of c.subcommands ?? []) walk(s);
  };
  walk(root);
  return index;
}

/** The flags a command accepts: globals, then its own and its ancestors'. */
export function flagsOf(path: readonly CommandSpec[], globals: readonly FlagSpec[]): FlagSpec[] {
  const out = new Map<string, FlagSpec>();
  for (const f of [HELP_FLAG, ...globals]) out.set(f.name, f);
  for (const c of path) for (const f of c.flags ?? []) out.set(f.name, f);
  return [...out.values()];
}

/** The positional-argument form in force: the first whose flag is given, else the command's own. */
export function argsFormOf(cmd: CommandSpec, given: (flag: string) => boolean): ArgsForm | CommandSpec {
  return cmd.argsForms?.find((f) => given(f.flag)) ?? cmd;
}

export function commandPath(path: readonly CommandSpec[]): string {
  return path.map((c) => c.name).join(' ');
}

interface RawFlag {
  spec: FlagSpec;
  value: string | undefined;
  token: string;
}

/** Splits argv into the selected command, its flags and positional arguments. Throws UsageError. */
export function resolveArgs(
  root: CommandSpec,
  globals: readonly FlagSpec[],
  argv: readonly string[],
): Resolved {
  const index = flagIndex(root, globals);
  const byShort = new Map<string, FlagSpec>();
  for (const f of index.values()) if (f.short) byShort.set(f.short, f);

  const path: CommandSpec[] = [root];
  const args: string[] = [];
  const raw: RawFlag[] = [];
  let help = false;
  let flagsEnded = false;

  const takeValue = (spec: FlagSpec, inline: string | undefined, token: string, i: number): number => {
    if (spec.type === 'boolean') {
      raw.push({ spec, value: inline, token });
      return i;
    }
    if (inline !== undefined) {
      raw.push({ spec, value: inline, token });
      return i;
    }
    const next = argv[i + 1];
    if (next === undefined) throw new UsageError(`flag ${token} needs a value`);
    raw.push({ spec, value: next, token });
    return i + 1;
  };

  for (let i = 0; i < argv.length; i++) {
    const tok = argv[i] ?? '';
    if (flagsEnded || tok === '-' || !tok.startsWith('-')) {
      const node = path[path.length - 1];
      const sub =
        args.length === 0 && !flagsEnded ? node?.subcommands?.find((c) => c.name === tok) : undefined;
      if (sub) path.push(sub);
      else args.push(tok);
      continue;
    }
    if (tok === '--') {
      flagsEnded = true;
      continue;
    }
    if (tok.startsWith('--')) {
      const eq = tok.indexOf('=');
      const name = eq < 0 ? tok.slice(2) : tok.slice(2, eq);
      const spec = index.get(name);
      if (!spec) throw new UsageError(`unknown flag --${name}`);
      i = takeValue(spec, eq < 0 ? undefined : tok.slice(eq + 1), `--${name}`, i);
      continue;
    }
    const spec = byShort.get(tok.slice(1, 2));
    if (!spec) throw new UsageError(`unknown flag ${tok.slice(0, 2)}`);
    const rest = tok.slice(2);
    const inline = rest === '' ? undefined : rest.startsWith('=') ? rest.slice(1) : rest;
    if (spec.type === 'boolean' && inline !== undefined)
      throw new UsageError(`flag -${spec.short} takes no value (got ${JSON.stringify(tok)})`);
    i = takeValue(spec, inline, `-${spec.short}`, i);
  }

  const allowed = new Set(flagsOf(path, globals).map((f) => f.name));
  const where = commandPath(path);
  const values = new Map<string, string | boolean | string[]>();
  for (const r of raw) {
    if (r.spec.name === HELP_FLAG.name) {
      help = true;
      continue;
    }
    if (!allowed.has(r.spec.name)) throw new UsageError(`unknown flag ${r.token} for "${where}"`);
    if (r.spec.type === 'boolean') {
      if (r.value !== undefined && r.value !== 'true' && r.value !== 'false')
        throw new UsageError(`flag ${r.token} is true or false, not ${JSON.stringify(r.value)}`);
      values.set(r.spec.name, r.value !== 'false');
    } else if (r.spec.type === 'strings') {
      const list = values.get(r.spec.name);
      values.set(r.spec.name, [...(Array.isArray(list) ? list : []), r.value ?? '']);
    } else {
      // Like kubectl: a repeated single-value flag takes the last value.
      values.set(r.spec.name, r.value ?? '');
    }
  }

  const flags: ParsedFlags = {
    string: (name) => {
      const v = values.get(name);
      return typeof v === 'string' ? v : undefined;
    },
    boolean: (name) => values.get(name) === true,
    strings: (name) => {
      const v = values.get(name);
      return Array.isArray(v) ? v : [];
    },
    has: (name) => values.has(name),
  };
  return { path, flags, args, help };
}
