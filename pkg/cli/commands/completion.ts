// `skein completion bash|zsh|fish` prints a script; the hidden `skein
// __complete <words...>` answers the script's questions from the command table.
import { existsSync } from 'node:fs';
import {
  type CompletionLookup,
  complete,
  completionScript,
  lineState,
  SHELLS,
  type Shell,
} from '../completion.js';
import { Kube, loadKubeConfig, record, str } from '../kube.js';
import type { CommandSpec, FlagSpec, RunContext } from '../spec.js';

function isShell(s: string): s is Shell {
  return SHELLS.some((x) => x === s);
}

/** Cluster lookups for completion: quick (2 s), and silent on any failure. */
export function clusterLookup(
  env: Record<string, string | undefined>,
  values: () => Map<string, string>,
): CompletionLookup {
  const selection = () => {
    const v = values();
    const kubeconfig = v.get('kubeconfig');
    const context = v.get('context');
    return { ...(kubeconfig ? { kubeconfig } : {}), ...(context ? { context } : {}), env };
  };
  const names = async (apiPath: string): Promise<string[]> => {
    try {
      const kube = Kube.open(selection(), 2_000);
      return (await kube.list(apiPath)).map((o) => str(record(o['metadata'])['name']) ?? '').filter(Boolean);
    } catch {
      return [];
    }
  };
  return {
    namespaces: () => names('/api/v1/namespaces'),
    pods: (ns) => names(`/api/v1/namespaces/${encodeURIComponent(ns)}/pods`),
    contexts: async () => {
      try {
        const sel = selection();
        if (sel.kubeconfig && !existsSync(sel.kubeconfig)) return [];
        return loadKubeConfig({ ...sel, context: undefined })
          .kubeConfig.getContexts()
          .map((c) => c.name);
      } catch {
        return [];
      }
    },
  };
}

export function completionCommands(root: () => CommandSpec, globals: readonly FlagSpec[]): CommandSpec[] {
  return [
    {
      name: 'completion',
      summary: 'Print a shell completion script (bash, zsh or fish)',
      description: `Load it in the current shell:
  bash:  source <(skein completion bash)
  zsh:   source <(skein completion zsh)      (after compinit)
  fish:  skein completion fish | source`,
      argsUsage: 'bash|zsh|fish',
      argsComplete: [{ kind: 'choices', values: SHELLS }],
      minArgs: 1,
      maxArgs: 1,
      run: async (ctx: RunContext) => {
        const shell = ctx.args[0] ?? '';
        if (!isShell(shell)) {
          ctx.io.err(
            `skein completion: unknown shell ${JSON.stringify(shell)}; pick one of ${SHELLS.join(', ')}\n`,
          );
          return 2;
        }
        ctx.io.out(completionScript(shell));
        return 0;
      },
    },
    {
      name: '__complete',
      summary: 'Completion candidates for a partial command line (used by the completion scripts)',
      hidden: true,
      run: async (ctx: RunContext) => {
        // Raw words, not parsed flags: the line is incomplete by nature.
        const words = ctx.args.length === 0 ? [''] : ctx.args;
        const typed = lineState(root(), globals, words.slice(0, -1)).values;
        const found = await complete(
          root(),
          globals,
          words,
          clusterLookup(ctx.io.env, () => typed),
        );
        for (const c of found) ctx.io.out(`${c}\n`);
        return 0;
      },
    },
  ];
}
