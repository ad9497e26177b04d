// Finding the skein controller's HTTP port (9091: /debug/*, /ui/): a URL the
// user gives (--controller-url, --local), or a port-forward to a ready
// controller pod in the control-plane namespace.
import { PORT_CONTROLLER_HTTP } from '../mesh/constants.js';
import { CliError, errorMessage } from './errors.js';
import { Kube, kubeSelection, record, str } from './kube.js';
import { forwardPort } from './portforward.js';
import type { FlagSpec, RunContext } from './spec.js';

export const DEFAULT_CONTROL_PLANE_NAMESPACE = 'skein-system';
export const CONTROLLER_NAME = 'skein-controller';
/** Labels the Helm chart puts on the controller's pods (contract: object names). */
export const CONTROLLER_SELECTOR = 'app.kubernetes.io/name=skein,app.kubernetes.io/component=controller';
export const LOCAL_CONTROLLER_URL = `http://127.0.0.1:${PORT_CONTROLLER_HTTP}`;

export const CONTROLLER_URL_FLAG: FlagSpec = {
  name: 'controller-url',
  type: 'string',
  valueName: 'url',
  description: 'Talk to the controller at this URL (its HTTP port) instead of port-forwarding to its pod',
};
export const LOCAL_FLAG: FlagSpec = {
  name: 'local',
  type: 'boolean',
  description: `The controller runs on this machine (skein-controller --local): use ${LOCAL_CONTROLLER_URL}`,
};
export const CONTROL_PLANE_NAMESPACE_FLAG: FlagSpec = {
  name: 'controller-namespace',
  type: 'string',
  valueName: 'ns',
  description: 'Namespace skein is installed in',
  defaultText: DEFAULT_CONTROL_PLANE_NAMESPACE,
  complete: { kind: 'namespace' },
};

export interface ControllerEndpoint {
  /** Base URL without a trailing slash. */
  url: string;
  /** How it was reached, for messages: the URL, or `port-forward to <ns>/<pod>`. */
  via: string;
  close(): Promise<void>;
}

interface ControllerPod {
  name: string;
  phase: string;
  ready: boolean;
}

function podsOf(items: Record<string, unknown>[]): ControllerPod[] {
  return items.map((p) => {
    const status = record(p['status']);
    const conditions = Array.isArray(status['conditions']) ? status['conditions'].map(record) : [];
    return {
      name: str(record(p['metadata'])['name']) ?? '',
      phase: str(status['phase']) ?? 'Unknown',
      ready: conditions.some((c) => c['type'] === 'Ready' && c['status'] === 'True'),
    };
  });
}

/** A ready controller pod, or a CliError saying what is missing (not installed, not ready). */
export async function readyControllerPod(kube: Kube, namespace: string): Promise<string> {
  const pods = podsOf(
    await kube.list(`/api/v1/namespaces/${encodeURIComponent(namespace)}/pods`, {
      labelSelector: CONTROLLER_SELECTOR,
    }),
  );
  if (pods.length === 0)
    throw new CliError(
      `no skein controller in namespace ${namespace}: run \`skein install\` (or pass --controller-namespace if skein is installed elsewhere)`,
    );
  const ready = pods.find((p) => p.ready);
  if (!ready)
    throw new CliError(
      `no ready skein controller pod in namespace ${namespace} (${pods.map((p) => `${p.name}: ${p.phase}, not ready`).join('; ')}); see \`kubectl -n ${namespace} describe pod ${pods[0]?.name ?? ''}\``,
    );
  return ready.name;
}

function normalise(url: string): string {
  try {
    const u = new URL(url);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('not http(s)');
  } catch {
    throw new CliError(`--controller-url ${JSON.stringify(url)} is not an http:// or https:// URL`);
  }
  return url.replace(/\/+$/, '');
}

/** Resolves the controller for a command with CONTROLLER_URL_FLAG (and optionally LOCAL_FLAG). */
export async function controllerEndpoint(ctx: RunContext): Promise<ControllerEndpoint> {
  const given = ctx.flags.string('controller-url');
  if (given !== undefined) {
    const url = normalise(given);
    return { url, via: url, close: async () => {} };
  }
  if (ctx.flags.boolean('local'))
    return { url: LOCAL_CONTROLLER_URL, via: LOCAL_CONTROLLER_URL, close: async () => {} };
  const kube = Kube.open(kubeSelection(ctx.flags, ctx.io.env));
  const namespace = ctx.flags.string('controller-namespace') ?? DEFAULT_CONTROL_PLANE_NAMESPACE;
  const pod = await readyControllerPod(kube, namespace);
  const forward = await forwardPort(kube.kubeConfig, namespace, pod, PORT_CONTROLLER_HTTP, (m) =>
    ctx.io.err(`skein: ${m}\n`),
  );
  return {
    url: `http://127.0.0.1:${forward.port}`,
    via: `port-forward to ${namespace}/${pod}`,
    close: () => forward.close(),
  };
}

/** GET a JSON document from the controller; 404 on /debug/* means the debug server is off. */
export async function controllerJson(ep: ControllerEndpoint, pathAndQuery: string): Promise<unknown> {
  let res: Response;
  try {
    res = await fetch(`${ep.url}${pathAndQuery}`, { signal: AbortSignal.timeout(15_000) });
  } catch (err) {
    const cause = err instanceof Error && err.cause instanceof Error ? `: ${err.cause.message}` : '';
    throw new CliError(`cannot reach the skein controller at ${ep.via}: ${errorMessage(err)}${cause}`);
  }
  const text = await res.text();
  if (res.ok) {
    try {
      return JSON.parse(text);
    } catch {
      throw new CliError(
        `the controller at ${ep.via} answered ${pathAndQuery} with something that is not JSON`,
      );
    }
  }
  throw new ControllerHttpError(res.status, text.trim(), ep.via, pathAndQuery);
}

export class ControllerHttpError extends CliError {
  constructor(
    readonly status: number,
    readonly body: string,
    via: string,
    what: string,
  ) {
    super(
      status === 404 && what.startsWith('/debug/') && body === 'not found'
        ? `the controller at ${via} does not serve ${what.split('?')[0]}: its debug endpoints are off (set spec.observability.enableDebugServer: true in the MeshConfig, or run the controller with --debug)`
        : `the controller at ${via} answered ${what} with HTTP ${status}: ${body}`,
    );
  }
}
