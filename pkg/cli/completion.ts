// Shell completion. The scripts are thin: they hand the words typed so far to
// `skein __complete`, which walks the same command table the parser uses and
// prints one candidate per line — so completion never drifts from the CLI.
// A first line `:file` asks the shell to complete file names instead.
import { argsFormOf, flagIndex, flagsOf } from './args.js';
import type { CommandSpec, CompletionSource, FlagSpec } from './spec.js';

export const FILE_DIRECTIVE = ':file';

/** Looks things up in the cluster for dynamic completion; answers [] when it cannot. */
export interface CompletionLookup {
  namespaces(): Promise<string[]>;
  pods(namespace: string): Promise<string[]>;
  contexts(): Promise<string[]>;
}

/** The state of a partly typed command line, as far as completion needs it. */
export interface LineState {
  path: CommandSpec[];
  positionals: string[];
  /** Flag values typed so far (last one wins), for lookups: `-n` decides which pods to offer. */
  values: Map<string, string>;
  /** Set when the word being completed is the value of this flag. */
  valueFor?: FlagSpec;
}

export function lineState(
  root: CommandSpec,
  globals: readonly FlagSpec[],
  prior: readonly string[],
): LineState {
  const index = flagIndex(root, globals);
  const byShort = new Map<string, FlagSpec>();
  for (const f of index.values()) if (f.short) byShort.set(f.short, f);
  const state: LineState = { path: [root], positionals: [], values: new Map<string, string>() };
  let pending: FlagSpec | undefined;
  for (const tok of prior) {
    if (pending) {
      state.values.set(pending.name, tok);
      pending = undefined;
      continue;
    }
    if (tok.startsWith('-') && tok !== '-' && tok !== '--') {
      const long = tok.startsWith('--');
      const eq = tok.indexOf('=');
      const spec = long ? index.get(tok.slice(2, eq < 0 ? undefined : eq)) : byShort.get(tok.slice(1, 2));
      if (!spec || spec.type === 'boolean') continue;
      const inline = long
        ? eq < 0
          ? undefined
          : tok.slice(eq + 1)
        : tok.length > 2
          ? tok.slice(2).replace(/^=/, '')
          : undefined;
      if (inline === undefined) pending = spec;
      else state.values.set(spec.name, inline);
      continue;
    }
    const node = state.path[state.path.length - 1];
    const sub =
      state.positionals.length === 0
        ? node?.subcommands?.find((c) => c.name === tok && !c.hidden)
        : undefined;
    if (sub) state.path.push(sub);
    else state.positionals.push(tok);
  }
  if (pending) state.valueFor = pending;
  return state;
}

async function fromSource(
  src: CompletionSource | undefined,
  state: LineState,
  lookup: CompletionLookup,
): Promise<string[]> {
  switch (src?.kind) {
    case 'choices':
      return [...src.values];
    case 'file':
      return [FILE_DIRECTIVE];
    case 'namespace':
      return lookup.namespaces();
    case 'pod':
      return lookup.pods(state.values.get('namespace') ?? 'default');
    case 'context':
      return lookup.contexts();
    default:
      return [];
  }
}

/**
 * Candidates for the last word of `words` (the words after `skein`; the last
 * one may be empty), filtered by what is typed of it.
 */
export async function complete(
  root: CommandSpec,
  globals: readonly FlagSpec[],
  words: readonly string[],
  lookup: CompletionLookup,
): Promise<string[]> {
  const current = words[words.length - 1] ?? '';
  const state = lineState(root, globals, words.slice(0, -1));
  const node = state.path[state.path.length - 1] ?? root;
  let candidates: string[];
  if (state.valueFor) {
    candidates = await fromSource(state.valueFor.complete, state, lookup);
  } else if (current.startsWith('-')) {
    candidates = flagsOf(state.path, globals).map((f) => `--${f.name}`);
  } else {
    const subs = state.positionals.length === 0 ? (node.subcommands ?? []).filter((c) => !c.hidden) : [];
    if (subs.length > 0) candidates = subs.map((c) => c.name);
    else {
      // `--to` typed earlier: the positionals of that form.
      const form = argsFormOf(node, (flag) => state.values.has(flag));
      const sources = form.argsComplete ?? [];
      const max = form.maxArgs ?? Number.POSITIVE_INFINITY;
      const i = state.positionals.length;
      candidates = i >= max ? [] : await fromSource(sources[Math.min(i, sources.length - 1)], state, lookup);
    }
  }
  if (candidates[0] === FILE_DIRECTIVE) return [FILE_DIRECTIVE];
  return candidates.filter((c) => c.startsWith(current));
}

export type Shell = 'bash' | 'zsh' | 'fish';
export const SHELLS: readonly Shell[] = ['bash', 'zsh', 'fish'];

/** The completion script for a shell; `prog` is the command name completion is registered for. */
export function completionScript(shell: Shell, prog = 'skein'): string {
  const fn = `_${prog.replace(/[^A-Za-z0-9_]/g, '_')}`;
  switch (shell) {
    case 'bash':
      return `# bash completion for ${prog}; load it with: source <(${prog} completion bash)
${fn}() {
  local cur="\${COMP_WORDS[COMP_CWORD]}"
  local out
  out=$("\${COMP_WORDS[0]}" __complete "\${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null) || return 0
  if [[ "$out" == "${FILE_DIRECTIVE}"* ]]; then
    mapfile -t COMPREPLY < <(compgen -f -- "$cur")
    return 0
  fi
  local IFS=$'\\n'
  mapfile -t COMPREPLY < <(compgen -W "$out" -- "$cur")
}
complete -o default -F ${fn} ${prog}
`;
    case 'zsh':
      return `#compdef ${prog}
# zsh completion for ${prog}; load it with: source <(${prog} completion zsh)
# (after compinit), or save it as ${fn} in a directory on $fpath.
${fn}() {
  local out
  out=$(\${words[1]} __complete "\${(@)words[2,CURRENT]}" 2>/dev/null) || return 1
  if [[ "$out" == ${FILE_DIRECTIVE}* ]]; then
    _files
    return
  fi
  local -a candidates
  candidates=("\${(@f)out}")
  compadd -- "\${candidates[@]}"
}
if [[ "\${funcstack[1]}" == "${fn}" ]]; then
  ${fn} "$@"
else
  compdef ${fn} ${prog}
fi
`;
    case 'fish':
      return `# fish completion for ${prog}; load it with: ${prog} completion fish | source
function __${fn}_complete
    set -l tokens (commandline -opc) (commandline -ct)
    set -e tokens[1]
    set -l out (${prog} __complete $tokens 2>/dev/null)
    if test "$out[1]" = "${FILE_DIRECTIVE}"
        __fish_complete_path (commandline -ct)
        return
    end
    printf '%s\\n' $out
end
complete -c ${prog} -f -a '(__${fn}_complete)'
`;
  }
}
