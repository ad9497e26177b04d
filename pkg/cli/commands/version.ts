// `skein version`: the CLI's version, and the controller's when a cluster is
// reachable (the image tag of the skein-controller Deployment, as Helm set it).
import { VERSION } from '../../version/version.js';
import {
  CONTROL_PLANE_NAMESPACE_FLAG,
  CONTROLLER_NAME,
  DEFAULT_CONTROL_PLANE_NAMESPACE,
} from '../controller.js';
import { errorMessage } from '../errors.js';
import { Kube, kubeSelection, record, str } from '../kube.js';
import type { CommandSpec, RunContext } from '../spec.js';

/** `repo/skein-controller:0.1.0` → `0.1.0`; a digest or no tag → the whole reference. */
export function imageTag(image: string): string {
  if (image.includes('@')) return image;
  const lastSlash = image.lastIndexOf('/');
  const colon = image.indexOf(':', lastSlash + 1);
  return colon < 0 ? `${image} (no tag: latest)` : image.slice(colon + 1);
}

async function controllerLine(ctx: RunContext): Promise<string> {
  const namespace = ctx.flags.string('controller-namespace') ?? DEFAULT_CONTROL_PLANE_NAMESPACE;
  let kube: Kube;
  try {
    kube = Kube.open(kubeSelection(ctx.flags, ctx.io.env), 5_000);
  } catch (err) {
    // A kubeconfig or context the user named must work; the ambient one is optional here.
    if (ctx.flags.has('kubeconfig') || ctx.flags.has('context')) throw err;
    return `controller: unknown (${errorMessage(err)})`;
  }
  const deployment = await kube
    .get(`/apis/apps/v1/namespaces/${encodeURIComponent(namespace)}/deployments/${CONTROLLER_NAME}`)
    .catch((err: unknown) => errorMessage(err));
  if (typeof deployment === 'string') return `controller: unknown (${deployment})`;
  if (!deployment) return `controller: not installed in namespace ${namespace} (run \`skein install\`)`;
  const spec = record(record(record(deployment['spec'])['template'])['spec']);
  const containers = Array.isArray(spec['containers']) ? spec['containers'].map(record) : [];
  const main = containers.find((c) => c['name'] === 'controller') ?? containers[0];
  const image = str(main?.['image']) ?? '';
  const status = record(deployment['status']);
  const ready = typeof status['readyReplicas'] === 'number' ? status['readyReplicas'] : 0;
  const wanted =
    typeof record(deployment['spec'])['replicas'] === 'number' ? record(deployment['spec'])['replicas'] : 1;
  return `controller ${imageTag(image)} (${namespace}/${CONTROLLER_NAME}, image ${image}, ${ready}/${String(wanted)} ready)`;
}

async function run(ctx: RunContext): Promise<number> {
  ctx.io.out(`skein ${VERSION}\n`);
  if (!ctx.flags.boolean('client')) ctx.io.out(`${await controllerLine(ctx)}\n`);
  return 0;
}

export const versionCommand: CommandSpec = {
  name: 'version',
  summary: 'Print the CLI version (and the controller version of the current cluster)',
  maxArgs: 0,
  flags: [
    {
      name: 'client',
      type: 'boolean',
      description: 'Print the CLI version only; do not contact the cluster',
    },
    CONTROL_PLANE_NAMESPACE_FLAG,
  ],
  run,
};
