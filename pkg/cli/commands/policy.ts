// `skein policy check <src-pod> <dst-pod>`: exit 0 allowed, 1 denied, 2 anything else.
import { buildMeshView } from '../../catalog/view.js';
import { DEFAULT_MESH_NAME } from '../../mesh/constants.js';
import type { Pod } from '../../model/objects.js';
import { validateManifest } from '../../registry/validate.js';
import { CONTROL_PLANE_NAMESPACE_FLAG, DEFAULT_CONTROL_PLANE_NAMESPACE } from '../controller.js';
import { CliError } from '../errors.js';
import { Kube, kubeSelection } from '../kube.js';
import { MESH_NAME_FLAG, NAMESPACE_FLAG } from '../mesh-flags.js';
import { type PodRef, parsePodRef, readPod } from '../pods.js';
import { checkPolicy, policyText } from '../policy-check.js';
import { readMeshSnapshot } from '../snapshot.js';
import type { CommandSpec, RunContext } from '../spec.js';

async function modelPod(kube: Kube, ref: PodRef): Promise<Pod> {
  const raw = await readPod(kube, ref);
  const result = validateManifest({ ...raw, apiVersion: 'v1', kind: 'Pod' }, { unknownFields: 'prune' });
  if (!result.ok || result.object.kind !== 'Pod')
    throw new CliError(
      `pod ${ref.namespace}/${ref.name} cannot be read as a pod: ${result.ok ? 'wrong kind' : result.reason}`,
    );
  return result.object;
}

async function check(ctx: RunContext): Promise<number> {
  const ns = ctx.flags.string('namespace');
  const src = parsePodRef(ctx.args[0] ?? '', ns);
  const dst = parsePodRef(ctx.args[1] ?? '', ns);
  const mesh = ctx.flags.string('mesh-name') ?? DEFAULT_MESH_NAME;
  const kube = Kube.open(kubeSelection(ctx.flags, ctx.io.env));
  const [srcPod, dstPod, snapshot] = await Promise.all([
    modelPod(kube, src),
    modelPod(kube, dst),
    readMeshSnapshot(kube, mesh, ctx.flags.string('controller-namespace') ?? DEFAULT_CONTROL_PLANE_NAMESPACE),
  ]);
  for (const w of snapshot.warnings) ctx.io.err(`warning: ${w}\n`);
  const view = buildMeshView(snapshot.store, { meshName: mesh });
  const verdict = checkPolicy(view, mesh, srcPod, dstPod);
  ctx.io.out(policyText(verdict, `${src.namespace}/${src.name}`, `${dst.namespace}/${dst.name}`));
  return verdict.verdict === 'ALLOWED' ? 0 : verdict.verdict === 'DENIED' ? 1 : 2;
}

export const policyCommand: CommandSpec = {
  name: 'policy',
  summary: 'Ask the policy engine about traffic between pods',
  subcommands: [
    {
      name: 'check',
      summary: 'May one pod reach another? Which TrafficTarget and routes decide?',
      description:
        "Reads the mesh from the API server and evaluates it with skein's own policy engine.\nExit status: 0 allowed, 1 denied, 2 error (or a pod not in the mesh).",
      argsUsage: '<src-pod> <dst-pod>',
      argsComplete: [{ kind: 'pod' }, { kind: 'pod' }],
      minArgs: 2,
      maxArgs: 2,
      flags: [NAMESPACE_FLAG, MESH_NAME_FLAG, CONTROL_PLANE_NAMESPACE_FLAG],
      examples: [
        'skein policy check bookbuyer/bookbuyer-5d8f bookstore/bookstore-v1-7c9',
        'skein policy check client server -n demo',
      ],
      run: check,
    },
  ],
};
