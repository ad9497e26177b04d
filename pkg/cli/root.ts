// The command table: every command, flag and argument of `skein`, from which
// parsing (args.ts), help (help.ts) and completion (completion.ts) are derived.

import { commandPath, resolveArgs } from './args.js';
import { caCommand } from './commands/ca.js';
import { completionCommands } from './commands/completion.js';
import { dashboardCommand } from './commands/dashboard.js';
import { ingressCommand } from './commands/ingress.js';
import { installCommand, uninstallCommand } from './commands/install.js';
import { namespaceCommand } from './commands/namespace.js';
import { policyCommand } from './commands/policy.js';
import { proxyCommand } from './commands/proxy.js';
import { versionCommand } from './commands/version.js';
import { UsageError } from './errors.js';
import { renderHelp } from './help.js';
import type { CommandSpec, FlagSpec } from './spec.js';

export const GLOBAL_FLAGS: readonly FlagSpec[] = [
  {
    name: 'kubeconfig',
    type: 'string',
    valueName: 'file',
    description: 'Kubeconfig file (default $KUBECONFIG, else ~/.kube/config)',
    complete: { kind: 'file' },
  },
  {
    name: 'context',
    type: 'string',
    valueName: 'name',
    description: "Kubeconfig context (default the file's current context)",
    complete: { kind: 'context' },
  },
];

const TOP_LEVEL = [
  'install',
  'uninstall',
  'namespace',
  'proxy',
  'policy',
  'ingress',
  'ca',
  'dashboard',
  'version',
  'completion',
];

export const ROOT: CommandSpec = {
  name: 'skein',
  summary: 'manage a skein service mesh',
  description: 'Run the controller itself with `skein-controller --help`.',
  subcommands: [
    installCommand,
    uninstallCommand,
    namespaceCommand,
    proxyCommand,
    policyCommand,
    ingressCommand,
    caCommand,
    dashboardCommand,
    versionCommand,
    ...completionCommands(() => ROOT, GLOBAL_FLAGS),
    {
      name: 'help',
      summary: 'Show help for a command',
      argsUsage: '[command...]',
      argsComplete: [{ kind: 'choices', values: TOP_LEVEL }],
      run: async (ctx) => {
        const resolved = resolveArgs(ROOT, GLOBAL_FLAGS, ctx.args);
        if (resolved.args.length > 0)
          throw new UsageError(`unknown command "${resolved.args[0]}" for "${commandPath(resolved.path)}"`);
        ctx.io.out(renderHelp(resolved.path, GLOBAL_FLAGS));
        return 0;
      },
    },
  ],
};
