// `skein` entry point: resolve the command, print help where asked, run it,
// and turn expected failures (CliError) into one line on stderr and an exit code.
import { argsFormOf, commandPath, resolveArgs } from './args.js';
import { CliError, UsageError } from './errors.js';
import { renderHelp } from './help.js';
import { GLOBAL_FLAGS, ROOT } from './root.js';
import type { CommandSpec, Io } from './spec.js';

/** Runs one command line (argv without `node` and the script); resolves with the exit code. */
export async function runCli(argv: readonly string[], io: Io): Promise<number> {
  const root = ROOT;
  let path: CommandSpec[] = [root];
  try {
    // Completion words are an unfinished command line: they go through raw.
    if (argv[0] === '__complete') {
      const cmd = root.subcommands?.find((c) => c.name === '__complete');
      return (
        (await cmd?.run?.({ commandPath: 'skein __complete', flags: noFlags, args: argv.slice(1), io })) ?? 2
      );
    }
    const resolved = resolveArgs(root, GLOBAL_FLAGS, argv);
    path = resolved.path;
    const cmd = path[path.length - 1] ?? root;
    const name = commandPath(path);
    if (resolved.help || (path.length === 1 && resolved.args.length === 0)) {
      io.out(renderHelp(path, GLOBAL_FLAGS));
      return 0;
    }
    if (!cmd.run) {
      if (resolved.args.length > 0)
        throw new UsageError(`unknown command "${resolved.args[0]}" for "${name}"`);
      io.err(`${name}: choose a command\n\n${renderHelp(path, GLOBAL_FLAGS)}`);
      return 2;
    }
    const n = resolved.args.length;
    const form = argsFormOf(cmd, (flag) => resolved.flags.has(flag));
    if (form.minArgs !== undefined && n < form.minArgs) {
      // Without a form's flag, every form is a way to complete the line.
      const others = form === cmd ? (cmd.argsForms ?? []).map((f) => f.argsUsage) : [];
      const usage = form.argsUsage ?? `${form.minArgs} argument(s)`;
      throw new UsageError(`${name} needs ${[usage, ...others].join(' or ')}`);
    }
    if (form.maxArgs !== undefined && n > form.maxArgs)
      throw new UsageError(
        form.maxArgs === 0
          ? `${name} takes no arguments (got ${JSON.stringify(resolved.args[0])})`
          : `${name} takes at most ${form.maxArgs} argument(s): ${form.argsUsage ?? ''}`,
      );
    return await cmd.run({ commandPath: name, flags: resolved.flags, args: resolved.args, io });
  } catch (err) {
    if (err instanceof UsageError) {
      io.err(`skein: ${err.message}\nRun "${commandPath(path)} --help" for usage.\n`);
      return err.exitCode;
    }
    if (err instanceof CliError) {
      io.err(`skein: ${err.message}\n`);
      return err.exitCode;
    }
    if (io.signal.aborted) return 130;
    // Not expected: keep the stack, it is a bug report.
    io.err(`skein: unexpected error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    return 1;
  }
}

const noFlags = {
  string: () => undefined,
  boolean: () => false,
  strings: () => [],
  has: () => false,
};
