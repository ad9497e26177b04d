// `skein namespace add|remove|list`: a namespace joins a mesh by the label
// skein.dev/monitored-by=<mesh>; sidecar injection follows the annotation
// skein.dev/sidecar-injection (enabled|disabled), as in OSM's `osm namespace`.
import { ANNOTATION_SIDECAR_INJECTION, DEFAULT_MESH_NAME, LABEL_MONITORED_BY } from '../../mesh/constants.js';
import { CliError, UsageError } from '../errors.js';
import { Kube, kubeSelection, record, str } from '../kube.js';
import { MESH_NAME_FLAG } from '../mesh-flags.js';
import type { CommandSpec, RunContext } from '../spec.js';
import { formatTable } from '../table.js';

const nsPath = (name: string) => `/api/v1/namespaces/${encodeURIComponent(name)}`;

interface NamespaceInfo {
  name: string;
  mesh: string | undefined;
  injection: string | undefined;
}

function namespaceInfo(obj: Record<string, unknown>): NamespaceInfo {
  const meta = record(obj['metadata']);
  return {
    name: str(meta['name']) ?? '',
    mesh: str(record(meta['labels'])[LABEL_MONITORED_BY]),
    injection: str(record(meta['annotations'])[ANNOTATION_SIDECAR_INJECTION]),
  };
}

async function readNamespace(kube: Kube, name: string): Promise<NamespaceInfo> {
  const obj = await kube.get(nsPath(name));
  if (!obj) throw new CliError(`namespace ${name} not found (in ${kube.where})`);
  return namespaceInfo(obj);
}

function injectionChoice(ctx: RunContext): 'enabled' | 'disabled' {
  const enable = ctx.flags.boolean('enable-sidecar-injection');
  const disable = ctx.flags.boolean('disable-sidecar-injection');
  if (enable && disable)
    throw new UsageError('--enable-sidecar-injection and --disable-sidecar-injection exclude each other');
  // Like `osm namespace add`: joining a mesh turns injection on unless told not to.
  return disable ? 'disabled' : 'enabled';
}

async function add(ctx: RunContext): Promise<number> {
  const mesh = ctx.flags.string('mesh-name') ?? DEFAULT_MESH_NAME;
  const injection = injectionChoice(ctx);
  const kube = Kube.open(kubeSelection(ctx.flags, ctx.io.env));
  for (const name of ctx.args) {
    const ns = await readNamespace(kube, name);
    if (ns.mesh !== undefined && ns.mesh !== mesh)
      throw new CliError(
        `namespace ${name} already belongs to mesh "${ns.mesh}" (${LABEL_MONITORED_BY}=${ns.mesh}); remove it there first: skein namespace remove ${name} --mesh-name ${ns.mesh}`,
      );
    await kube.mergePatch(nsPath(name), {
      metadata: {
        labels: { [LABEL_MONITORED_BY]: mesh },
        annotations: { [ANNOTATION_SIDECAR_INJECTION]: injection },
      },
    });
    ctx.io.out(`namespace ${name} added to mesh ${mesh} (sidecar injection ${injection})\n`);
  }
  if (injection === 'enabled')
    ctx.io.out('Pods created from now on get a sidecar; restart existing pods to add theirs.\n');
  return 0;
}

async function remove(ctx: RunContext): Promise<number> {
  const mesh = ctx.flags.string('mesh-name') ?? DEFAULT_MESH_NAME;
  const kube = Kube.open(kubeSelection(ctx.flags, ctx.io.env));
  for (const name of ctx.args) {
    const ns = await readNamespace(kube, name);
    if (ns.mesh === undefined) {
      ctx.io.out(`namespace ${name} is not in any mesh; nothing to do\n`);
      continue;
    }
    if (ns.mesh !== mesh)
      throw new CliError(
        `namespace ${name} belongs to mesh "${ns.mesh}", not "${mesh}": pass --mesh-name ${ns.mesh} to remove it`,
      );
    // A merge patch with null deletes the key.
    await kube.mergePatch(nsPath(name), {
      metadata: {
        labels: { [LABEL_MONITORED_BY]: null },
        annotations: { [ANNOTATION_SIDECAR_INJECTION]: null },
      },
    });
    ctx.io.out(`namespace ${name} removed from mesh ${mesh}\n`);
  }
  return 0;
}

/** The `list` table; exported for its unit test. */
export function namespaceTable(namespaces: readonly NamespaceInfo[]): string {
  const rows = [...namespaces]
    .sort((a, b) => a.name.localeCompare(b.name))
    .map((n) => [n.name, n.mesh ?? '', n.injection ?? 'not set (off)']);
  return formatTable(['NAMESPACE', 'MESH', 'SIDECAR-INJECTION'], rows);
}

async function list(ctx: RunContext): Promise<number> {
  const kube = Kube.open(kubeSelection(ctx.flags, ctx.io.env));
  // Without --mesh-name every mesh's namespaces are shown (the MESH column tells them apart).
  const mesh = ctx.flags.string('mesh-name');
  const selector = mesh === undefined ? LABEL_MONITORED_BY : `${LABEL_MONITORED_BY}=${mesh}`;
  const items = await kube.list('/api/v1/namespaces', { labelSelector: selector });
  const namespaces = items.map(namespaceInfo);
  if (namespaces.length === 0) {
    ctx.io.out(
      mesh === undefined
        ? 'no namespace is in a mesh; add one with: skein namespace add <ns>\n'
        : `no namespace is in mesh ${mesh}; add one with: skein namespace add <ns> --mesh-name ${mesh}\n`,
    );
    return 0;
  }
  ctx.io.out(namespaceTable(namespaces));
  return 0;
}

export const namespaceCommand: CommandSpec = {
  name: 'namespace',
  summary: 'Add namespaces to a mesh, remove them, list them',
  subcommands: [
    {
      name: 'add',
      summary: 'Add namespaces to the mesh (and turn on sidecar injection)',
      description: `Labels each namespace ${LABEL_MONITORED_BY}=<mesh> and sets the annotation\n${ANNOTATION_SIDECAR_INJECTION}: enabled (or disabled with --disable-sidecar-injection).`,
      argsUsage: '<namespace>...',
      argsComplete: [{ kind: 'namespace' }],
      minArgs: 1,
      flags: [
        MESH_NAME_FLAG,
        {
          name: 'enable-sidecar-injection',
          type: 'boolean',
          description: 'Inject the Envoy sidecar into new pods (the default)',
        },
        {
          name: 'disable-sidecar-injection',
          type: 'boolean',
          description: 'Join the mesh without sidecar injection (e.g. proxyless gRPC workloads)',
        },
      ],
      examples: [
        'skein namespace add bookstore bookbuyer',
        'skein namespace add legacy --disable-sidecar-injection',
      ],
      run: add,
    },
    {
      name: 'remove',
      summary: 'Remove namespaces from the mesh',
      description: `Deletes the ${LABEL_MONITORED_BY} label and the ${ANNOTATION_SIDECAR_INJECTION} annotation.\nRunning pods keep their sidecars until restarted.`,
      argsUsage: '<namespace>...',
      argsComplete: [{ kind: 'namespace' }],
      minArgs: 1,
      flags: [MESH_NAME_FLAG],
      run: remove,
    },
    {
      name: 'list',
      summary: 'List the namespaces in the mesh and their sidecar injection',
      maxArgs: 0,
      flags: [{ ...MESH_NAME_FLAG, defaultText: 'every mesh' }],
      run: list,
    },
  ],
};
