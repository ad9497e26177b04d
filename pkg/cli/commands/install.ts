// `skein install` / `skein uninstall`. Install applies skein's CRDs itself
// (server-side apply: Helm installs crds/ once and never upgrades them), then
// runs `helm upgrade --install` of charts/skein, then waits for the controller
// Deployment with progress lines. Uninstall keeps the CRDs (and every SMI
// object in the cluster) unless --delete-crds says otherwise.
import { applyCrds, deleteCrds } from '../../install/crds.js';
import { HELM_ENV, helmUninstall, helmUpgradeInstall, waitForController } from '../../install/helm.js';
import { DEFAULT_MESH_NAME } from '../../mesh/constants.js';
import { formatDuration, parseDuration } from '../../mesh/duration.js';
import { DEFAULT_CONTROL_PLANE_NAMESPACE } from '../controller.js';
import { CliError, errorMessage, UsageError } from '../errors.js';
import { Kube, kubeSelection } from '../kube.js';
import { MESH_NAME_FLAG } from '../mesh-flags.js';
import type { CommandSpec, FlagSpec, RunContext } from '../spec.js';
import { applySets, type Values } from '../values.js';

const DEFAULT_RELEASE = 'skein';

const CP_NAMESPACE_FLAG: FlagSpec = {
  name: 'namespace',
  short: 'n',
  type: 'string',
  valueName: 'ns',
  description: 'Control-plane namespace (the Helm release namespace)',
  defaultText: DEFAULT_CONTROL_PLANE_NAMESPACE,
  complete: { kind: 'namespace' },
};
const RELEASE_FLAG: FlagSpec = {
  name: 'release',
  type: 'string',
  valueName: 'name',
  description: 'Helm release name',
  defaultText: DEFAULT_RELEASE,
};
const TIMEOUT_FLAG: FlagSpec = {
  name: 'timeout',
  type: 'string',
  valueName: 'duration',
  description: 'How long to wait (e.g. 90s, 5m)',
  defaultText: '5m',
};

function timeoutMs(ctx: RunContext): number {
  const t = ctx.flags.string('timeout');
  if (t === undefined) return 5 * 60_000;
  try {
    return parseDuration(t);
  } catch (err) {
    throw new UsageError(`--timeout: ${errorMessage(err)}`);
  }
}

/** The Kubernetes side of helm: the same kubeconfig and context the CLI uses. */
function helmContext(ctx: RunContext) {
  const kubeconfig = ctx.flags.string('kubeconfig');
  const kubeContext = ctx.flags.string('context');
  return {
    ...(kubeconfig !== undefined ? { kubeconfig } : {}),
    ...(kubeContext !== undefined ? { kubeContext } : {}),
    ...(ctx.io.env[HELM_ENV] ? { helmPath: ctx.io.env[HELM_ENV] } : {}),
    signal: ctx.io.signal,
    onLine: (line: string) => ctx.io.out(`  ${line}\n`),
  };
}

/** Fails early, with the CLI's message, when the cluster cannot be reached. */
async function preflight(ctx: RunContext): Promise<Kube> {
  const kube = Kube.open(kubeSelection(ctx.flags, ctx.io.env));
  await kube.request('GET', '/version');
  return kube;
}

/**
 * The chart values that make `ref` (registry/repo[:tag], e.g. what `make image`
 * produced, pushed) the controller image. The init image follows: it defaults
 * to the controller's, which carries iptables. No tag means the chart's appVersion.
 */
export function imageValues(ref: string): Values {
  if (ref.includes('@')) throw new UsageError(`--image ${ref}: the chart takes repository:tag, not a digest`);
  // A colon after the last slash starts the tag; one before it is a registry port.
  const colon = ref.lastIndexOf(':');
  const hasTag = colon > ref.lastIndexOf('/');
  const repository = hasTag ? ref.slice(0, colon) : ref;
  const tag = hasTag ? ref.slice(colon + 1) : '';
  if (!repository || (hasTag && !tag) || /\s/.test(ref))
    throw new UsageError(`--image ${ref}: not an image reference`);
  return { images: { controller: { repository, tag } } };
}

export function installValues(ctx: Pick<RunContext, 'flags'>): Values {
  const image = ctx.flags.string('image');
  const values: Values = image !== undefined ? imageValues(image) : {};
  const mesh = ctx.flags.string('mesh-name');
  if (mesh !== undefined) values['meshName'] = mesh;
  if (ctx.flags.has('permissive')) values['permissive'] = ctx.flags.boolean('permissive');
  // --set comes last: it is the most specific thing the user said.
  return applySets(values, ctx.flags.strings('set'));
}

async function install(ctx: RunContext): Promise<number> {
  const namespace = ctx.flags.string('namespace') ?? DEFAULT_CONTROL_PLANE_NAMESPACE;
  const release = ctx.flags.string('release') ?? DEFAULT_RELEASE;
  const wait = !ctx.flags.has('wait') || ctx.flags.boolean('wait');
  const waitMs = timeoutMs(ctx);
  const values = installValues(ctx);
  const kube = await preflight(ctx);

  ctx.io.out(`Applying skein's CustomResourceDefinitions to ${kube.where}\n`);
  try {
    await applyCrds(kube.kubeConfig, { onProgress: (l) => ctx.io.out(`  ${l}\n`), signal: ctx.io.signal });
  } catch (err) {
    throw kube.explain(err);
  }

  ctx.io.out(`Installing the skein chart: release ${release} in namespace ${namespace}\n`);
  let status: Awaited<ReturnType<typeof helmUpgradeInstall>>;
  try {
    const chart = ctx.flags.string('chart');
    status = await helmUpgradeInstall({
      ...helmContext(ctx),
      release,
      namespace,
      ...(chart !== undefined ? { chart } : {}),
      values,
      valuesFiles: ctx.flags.strings('values'),
      // The CRDs were applied above, at this chart's version.
      skipCrds: true,
    });
  } catch (err) {
    throw new CliError(errorMessage(err));
  }
  ctx.io.out(`Release ${status.name} revision ${status.revision}: ${status.status}\n`);

  if (!wait) {
    ctx.io.out('Not waiting for the controller (--wait=false).\n');
    return 0;
  }
  ctx.io.out(`Waiting up to ${formatDuration(waitMs)} for the skein controller to become ready\n`);
  try {
    const done = await waitForController(kube.kubeConfig, {
      namespace,
      timeoutMs: waitMs,
      signal: ctx.io.signal,
      onProgress: (p) => {
        ctx.io.out(`  ${p.message}\n`);
        for (const problem of p.podProblems) ctx.io.out(`    ${problem}\n`);
      },
    });
    ctx.io.out(`skein is ready (${done.message}). Next: skein namespace add <ns>\n`);
    return 0;
  } catch (err) {
    throw new CliError(`the skein controller did not become ready: ${errorMessage(err)}`);
  }
}

async function uninstall(ctx: RunContext): Promise<number> {
  const namespace = ctx.flags.string('namespace') ?? DEFAULT_CONTROL_PLANE_NAMESPACE;
  const release = ctx.flags.string('release') ?? DEFAULT_RELEASE;
  const kube = await preflight(ctx);
  ctx.io.out(`Uninstalling release ${release} from namespace ${namespace} (${kube.where})\n`);
  let removed: boolean;
  try {
    removed = await helmUninstall({
      ...helmContext(ctx),
      release,
      namespace,
      ...(ctx.flags.boolean('wait') ? { wait: true, timeout: `${Math.ceil(timeoutMs(ctx) / 1000)}s` } : {}),
    });
  } catch (err) {
    throw new CliError(errorMessage(err));
  }
  ctx.io.out(
    removed
      ? `Release ${release} uninstalled.\n`
      : `No release ${release} in namespace ${namespace}; nothing to uninstall.\n`,
  );
  if (ctx.flags.boolean('delete-crds')) {
    try {
      const gone = await deleteCrds(kube.kubeConfig, {
        onProgress: (l) => ctx.io.out(`  ${l}\n`),
        signal: ctx.io.signal,
      });
      ctx.io.out(`${gone.length} CustomResourceDefinitions deleted, with every object of their kinds.\n`);
    } catch (err) {
      throw kube.explain(err);
    }
  } else {
    ctx.io.out('CustomResourceDefinitions and SMI objects kept (pass --delete-crds to remove them).\n');
  }
  ctx.io.out(`Namespaces stay labelled; see \`skein namespace list --mesh-name <mesh>\`.\n`);
  return 0;
}

export const installCommand: CommandSpec = {
  name: 'install',
  summary: 'Install or upgrade skein in the cluster (CRDs, then the Helm chart)',
  description: `Applies skein's CRDs (server-side apply, so upgrades update them too), then runs
\`helm upgrade --install\` of charts/skein, then waits for the controller Deployment.
Helm 3 must be on PATH, or named by $${HELM_ENV}.`,
  maxArgs: 0,
  flags: [
    CP_NAMESPACE_FLAG,
    { ...MESH_NAME_FLAG, defaultText: `${DEFAULT_MESH_NAME} (the chart's meshName)` },
    {
      name: 'permissive',
      type: 'boolean',
      description: 'Permissive traffic policy: every meshed service may reach every other',
    },
    {
      name: 'image',
      type: 'string',
      valueName: 'ref',
      description:
        'Controller image (and so the init image), e.g. registry.example:5000/skein/controller:0.1.0 (default docker.io/skein/controller:<appVersion>)',
    },
    {
      name: 'set',
      type: 'strings',
      valueName: 'key=value',
      description: 'Set a chart value (Helm --set syntax for maps and scalars)',
    },
    {
      name: 'values',
      short: 'f',
      type: 'strings',
      valueName: 'file',
      description: 'A values file for the chart',
      complete: { kind: 'file' },
    },
    {
      name: 'chart',
      type: 'string',
      valueName: 'dir',
      description: 'Chart to install instead of the bundled charts/skein',
      complete: { kind: 'file' },
    },
    RELEASE_FLAG,
    {
      name: 'wait',
      type: 'boolean',
      description: 'Wait for the controller to become ready (default true; --wait=false to skip)',
    },
    TIMEOUT_FLAG,
  ],
  examples: [
    'skein install',
    'skein install --mesh-name prod --permissive',
    'skein install --set replicas=2 --set webhook.failurePolicy=Ignore',
    'skein install --image registry.example:5000/skein/controller:0.1.0',
  ],
  run: install,
};

export const uninstallCommand: CommandSpec = {
  name: 'uninstall',
  summary: 'Remove skein from the cluster (helm uninstall); CRDs are kept unless --delete-crds',
  maxArgs: 0,
  flags: [
    CP_NAMESPACE_FLAG,
    RELEASE_FLAG,
    {
      name: 'delete-crds',
      type: 'boolean',
      description: "Also delete skein's CRDs and every SMI/MeshConfig object in the cluster",
    },
    { name: 'wait', type: 'boolean', description: "Wait until the release's objects are gone" },
    TIMEOUT_FLAG,
  ],
  run: uninstall,
};
