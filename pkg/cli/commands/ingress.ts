// `skein ingress routes`: what skein's ingress gateway serves, read from the API server.
import { buildMeshView } from '../../catalog/view.js';
import { DEFAULT_MESH_NAME } from '../../mesh/constants.js';
import { CONTROL_PLANE_NAMESPACE_FLAG, DEFAULT_CONTROL_PLANE_NAMESPACE } from '../controller.js';
import { GATEWAY_SERVICE_ACCOUNT, gatewayRoutes, gatewayRoutesText } from '../gateway-routes.js';
import { Kube, kubeSelection } from '../kube.js';
import { MESH_NAME_FLAG } from '../mesh-flags.js';
import { readMeshSnapshot } from '../snapshot.js';
import type { CommandSpec, RunContext } from '../spec.js';

async function routes(ctx: RunContext): Promise<number> {
  const mesh = ctx.flags.string('mesh-name') ?? DEFAULT_MESH_NAME;
  const controlPlane = ctx.flags.string('controller-namespace') ?? DEFAULT_CONTROL_PLANE_NAMESPACE;
  const kube = Kube.open(kubeSelection(ctx.flags, ctx.io.env));
  const snapshot = await readMeshSnapshot(kube, mesh, controlPlane);
  for (const w of snapshot.warnings) ctx.io.err(`warning: ${w}\n`);
  const view = buildMeshView(snapshot.store, { meshName: mesh });
  const result = gatewayRoutes(view, { namespace: controlPlane, serviceAccount: GATEWAY_SERVICE_ACCOUNT });
  ctx.io.out(ctx.flags.boolean('json') ? `${JSON.stringify(result, null, 2)}\n` : gatewayRoutesText(result));
  return 0;
}

export const ingressCommand: CommandSpec = {
  name: 'ingress',
  summary: "Show what skein's ingress gateway serves",
  subcommands: [
    {
      name: 'routes',
      summary: 'Hosts, paths, backends and TLS of the Ingresses of class skein',
      description:
        'Reads the mesh from the API server and compiles it as the controller does. TARGET says where a\nroute goes (the backend clusters, with TrafficSplit weights) or why the gateway refuses it.',
      maxArgs: 0,
      flags: [
        MESH_NAME_FLAG,
        CONTROL_PLANE_NAMESPACE_FLAG,
        { name: 'json', type: 'boolean', description: 'Print JSON instead of a table' },
      ],
      examples: ['skein ingress routes', 'skein ingress routes --json'],
      run: routes,
    },
  ],
};
