// --help text, rendered from the command table.
import { commandPath, flagsOf } from './args.js';
import type { CommandSpec, FlagSpec } from './spec.js';

function flagLabel(f: FlagSpec): string {
  const long = `--${f.name}${f.type === 'boolean' ? '' : ` <${f.valueName ?? 'value'}>`}`;
  return f.short ? `-${f.short}, ${long}` : `    ${long}`;
}

function flagLines(flags: readonly FlagSpec[]): string[] {
  const width = Math.max(...flags.map((f) => flagLabel(f).length));
  return flags.map((f) => {
    const extra = [
      f.type === 'strings' ? '(repeatable)' : '',
      f.defaultText ? `(default ${f.defaultText})` : '',
    ]
      .filter(Boolean)
      .join(' ');
    return `  ${flagLabel(f).padEnd(width)}  ${f.description}${extra ? ` ${extra}` : ''}`;
  });
}

/** Help for the last command of `path`. */
export function renderHelp(path: readonly CommandSpec[], globals: readonly FlagSpec[]): string {
  const cmd = path[path.length - 1];
  if (!cmd) return '';
  const name = commandPath(path);
  const lines: string[] = [`${name} — ${cmd.summary}`, ''];
  if (cmd.description) lines.push(cmd.description.trimEnd(), '');
  const subs = (cmd.subcommands ?? []).filter((s) => !s.hidden);
  lines.push('Usage:');
  if (cmd.run) {
    lines.push(`  ${name}${cmd.argsUsage ? ` ${cmd.argsUsage}` : ''} [flags]`);
    for (const f of cmd.argsForms ?? []) lines.push(`  ${name} ${f.argsUsage} [flags]`);
  }
  if (subs.length > 0) lines.push(`  ${name} <command> [flags]`);
  lines.push('');
  if (subs.length > 0) {
    const width = Math.max(...subs.map((s) => s.name.length));
    lines.push('Commands:');
    for (const s of subs) lines.push(`  ${s.name.padEnd(width)}  ${s.summary}`);
    lines.push('');
  }
  const own = new Set(path.flatMap((c) => (c.flags ?? []).map((f) => f.name)));
  const all = flagsOf(path, globals);
  const local = all.filter((f) => own.has(f.name));
  const global = all.filter((f) => !own.has(f.name));
  if (local.length > 0) lines.push('Flags:', ...flagLines(local), '');
  lines.push('Global flags:', ...flagLines(global), '');
  if (cmd.examples && cmd.examples.length > 0)
    lines.push('Examples:', ...cmd.examples.map((e) => `  ${e}`), '');
  if (subs.length > 0) lines.push(`Run "${name} <command> --help" for more about a command.`);
  return `${lines.join('\n').trimEnd()}\n`;
}
