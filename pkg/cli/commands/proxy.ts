// `skein proxy get status|config|stats <pod>`: what the controller last sent a
// pod's proxy and whether the proxy ACKed it, and the traffic figures its
// sidecar reported, from the controller's debug endpoints (/debug/proxies,
// /debug/config_dump, /debug/stats), like `istioctl proxy-status`.
import { PUSH_ORDER, TypeUrl } from '../../envoy/types.js';
import {
  CONTROL_PLANE_NAMESPACE_FLAG,
  CONTROLLER_URL_FLAG,
  type ControllerEndpoint,
  ControllerHttpError,
  controllerEndpoint,
  controllerJson,
  LOCAL_FLAG,
} from '../controller.js';
import { CliError } from '../errors.js';
import { Kube, kubeSelection, record, str } from '../kube.js';
import { NAMESPACE_FLAG } from '../mesh-flags.js';
import { type PodRef, parsePodRef, proxyUuidOf, readPod } from '../pods.js';
import type { CommandSpec, RunContext } from '../spec.js';
import { parseStats, statsText } from '../stats.js';
import { formatTable } from '../table.js';

export interface ProxyTypeRow {
  typeUrl: string;
  sentVersion?: string;
  ackedVersion?: string;
  nackedVersion?: string;
  lastNackMessage?: string;
  syncState: string;
}

export interface ProxyStream {
  streamId: string;
  cn: string;
  uuid: string;
  connectedAt: string;
  protocol: 'sotw' | 'delta';
  pod?: PodRef;
  types: ProxyTypeRow[];
}

/** /debug/proxies as sent (JSON), checked field by field. */
export function parseDebugProxies(body: unknown): ProxyStream[] {
  if (!Array.isArray(body)) throw new CliError('/debug/proxies did not answer a list');
  return body.map((raw) => {
    const p = record(raw);
    const identity = record(p['identity']);
    const pod = record(p['pod']);
    const podNs = str(pod['namespace']);
    const podName = str(pod['name']);
    const types = Object.entries(record(p['types'])).map(([typeUrl, t]) => {
      const r = record(t);
      const row: ProxyTypeRow = { typeUrl, syncState: str(r['syncState']) ?? 'UNKNOWN' };
      for (const k of ['sentVersion', 'ackedVersion', 'nackedVersion', 'lastNackMessage'] as const) {
        const v = str(r[k]);
        if (v !== undefined) row[k] = v;
      }
      return row;
    });
    return {
      streamId: str(p['streamId']) ?? '',
      cn: str(identity['cn']) ?? '',
      uuid: str(identity['uuid']) ?? '',
      connectedAt: str(p['connectedAt']) ?? '',
      protocol: p['protocol'] === 'delta' ? 'delta' : 'sotw',
      ...(podNs !== undefined && podName !== undefined ? { pod: { namespace: podNs, name: podName } } : {}),
      types,
    };
  });
}

const SHORT: Record<string, string> = {
  [TypeUrl.Listener]: 'LDS',
  [TypeUrl.RouteConfiguration]: 'RDS',
  [TypeUrl.Cluster]: 'CDS',
  [TypeUrl.ClusterLoadAssignment]: 'EDS',
  [TypeUrl.Secret]: 'SDS',
};

export function shortType(typeUrl: string): string {
  return SHORT[typeUrl] ?? typeUrl.slice(typeUrl.lastIndexOf('.') + 1);
}

/** Rows in push order (CDS, EDS, SDS, LDS, RDS); unknown types last. */
const TYPE_ORDER: readonly string[] = PUSH_ORDER;

function typeRank(typeUrl: string): number {
  const i = TYPE_ORDER.indexOf(typeUrl);
  return i < 0 ? TYPE_ORDER.length : i;
}

/** The status text of a proxy's streams (normally one). */
export function proxyStatusText(streams: readonly ProxyStream[]): string {
  return streams
    .map((s) => {
      const head = [
        `PROXY   ${s.cn}`,
        ...(s.pod ? [`POD     ${s.pod.namespace}/${s.pod.name}`] : []),
        `STREAM  ${s.streamId} (${s.protocol === 'delta' ? 'Delta xDS' : 'state of the world'}), connected ${s.connectedAt}`,
        '',
      ].join('\n');
      const rows = [...s.types]
        .sort((a, b) => typeRank(a.typeUrl) - typeRank(b.typeUrl) || a.typeUrl.localeCompare(b.typeUrl))
        .map((t) => [
          shortType(t.typeUrl),
          t.sentVersion ?? '-',
          t.ackedVersion ?? '-',
          t.syncState,
          t.lastNackMessage ?? '',
        ]);
      const table =
        rows.length === 0
          ? 'no xDS type requested yet\n'
          : formatTable(['TYPE', 'SENT', 'ACKED', 'STATE', 'LAST NACK'], rows);
      return `${head}\n${table}`;
    })
    .join('\n');
}

interface Target {
  /** What to ask the controller for, and how to say which proxy it is. */
  match: (s: ProxyStream) => boolean;
  uuid?: string;
  label: string;
}

/**
 * Which proxy a pod runs: its proxy-UUID label read from the API. Without any
 * kubeconfig but with a controller URL (local mode: no API server), the pod
 * the controller itself reports for each proxy is used instead.
 */
async function targetOf(ctx: RunContext, ref: PodRef): Promise<Target> {
  const label = `${ref.namespace}/${ref.name}`;
  const direct = ctx.flags.has('controller-url') || ctx.flags.boolean('local');
  let kube: Kube | undefined;
  try {
    kube = Kube.open(kubeSelection(ctx.flags, ctx.io.env));
  } catch (err) {
    if (!direct || ctx.flags.has('kubeconfig') || ctx.flags.has('context')) throw err;
  }
  if (!kube) return { match: (s) => s.pod?.namespace === ref.namespace && s.pod.name === ref.name, label };
  const uuid = proxyUuidOf(await readPod(kube, ref), ref);
  return { match: (s) => s.uuid === uuid, uuid, label };
}

async function withController<T>(ctx: RunContext, use: (ep: ControllerEndpoint) => Promise<T>): Promise<T> {
  const ep = await controllerEndpoint(ctx);
  try {
    return await use(ep);
  } finally {
    await ep.close();
  }
}

async function connectedStreams(ep: ControllerEndpoint, target: Target): Promise<ProxyStream[]> {
  const streams = parseDebugProxies(await controllerJson(ep, '/debug/proxies')).filter(target.match);
  if (streams.length === 0)
    throw new CliError(
      `no proxy of pod ${target.label}${target.uuid ? ` (proxy UUID ${target.uuid})` : ''} is connected to the controller at ${ep.via}`,
    );
  return streams;
}

async function status(ctx: RunContext): Promise<number> {
  const ref = parsePodRef(ctx.args[0] ?? '', ctx.flags.string('namespace'));
  const target = await targetOf(ctx, ref);
  return withController(ctx, async (ep) => {
    ctx.io.out(proxyStatusText(await connectedStreams(ep, target)));
    return 0;
  });
}

async function config(ctx: RunContext): Promise<number> {
  const ref = parsePodRef(ctx.args[0] ?? '', ctx.flags.string('namespace'));
  const target = await targetOf(ctx, ref);
  return withController(ctx, async (ep) => {
    const streams = await connectedStreams(ep, target);
    // The newest stream: after a reconnect that is what the proxy runs on.
    const newest = streams.reduce((a, b) => (b.connectedAt >= a.connectedAt ? b : a));
    const dump = await controllerJson(ep, `/debug/config_dump?proxy=${encodeURIComponent(newest.streamId)}`);
    ctx.io.out(`${JSON.stringify(dump, null, 2)}\n`);
    return 0;
  });
}

/** One pod's proxy per destination service, or without a pod every edge of the mesh. */
async function stats(ctx: RunContext): Promise<number> {
  const arg = ctx.args[0];
  if (arg === undefined) {
    return withController(ctx, async (ep) => {
      ctx.io.out(statsText(parseStats(await controllerJson(ep, '/debug/stats')), 'mesh'));
      return 0;
    });
  }
  const ref = parsePodRef(arg, ctx.flags.string('namespace'));
  const target = await targetOf(ctx, ref);
  return withController(ctx, async (ep) => {
    const streams = await connectedStreams(ep, target);
    const newest = streams.reduce((a, b) => (b.connectedAt >= a.connectedAt ? b : a));
    const page = await controllerJson(ep, `/debug/stats?proxy=${encodeURIComponent(newest.uuid)}`).catch(
      (err: unknown) => {
        // 404: connected, but nothing reported within the window (no traffic, or no stats sink).
        if (err instanceof ControllerHttpError && err.status === 404 && err.body.startsWith('no figures'))
          return { windowSeconds: 60, upstreams: [] };
        throw err;
      },
    );
    ctx.io.out(statsText(parseStats(page), target.label));
    return 0;
  });
}

const proxyFlags = [NAMESPACE_FLAG, CONTROLLER_URL_FLAG, LOCAL_FLAG, CONTROL_PLANE_NAMESPACE_FLAG];

export const proxyCommand: CommandSpec = {
  name: 'proxy',
  summary: "Inspect a pod's proxy as the controller sees it",
  subcommands: [
    {
      name: 'get',
      summary: "Show a proxy's xDS sync status or the configuration it was sent",
      subcommands: [
        {
          name: 'status',
          summary: 'Per xDS type: version sent, version ACKed, SYNCED/STALE/NACKED',
          argsUsage: '<pod>',
          argsComplete: [{ kind: 'pod' }],
          minArgs: 1,
          maxArgs: 1,
          flags: proxyFlags,
          examples: [
            'skein proxy get status bookbuyer-5d8f -n bookbuyer',
            'skein proxy get status bookbuyer/bookbuyer-5d8f --local',
          ],
          run: status,
        },
        {
          name: 'config',
          summary: 'The resources last sent to the proxy, per xDS type, as JSON',
          argsUsage: '<pod>',
          argsComplete: [{ kind: 'pod' }],
          minArgs: 1,
          maxArgs: 1,
          flags: proxyFlags,
          examples: ['skein proxy get config bookbuyer-5d8f -n bookbuyer'],
          run: config,
        },
        {
          name: 'stats',
          summary:
            "Per destination service: request rate, success rate, p50/p99 latency over the last minute, as the pod's sidecar reported them (without a pod: every edge)",
          argsUsage: '[<pod>]',
          argsComplete: [{ kind: 'pod' }],
          minArgs: 0,
          maxArgs: 1,
          flags: proxyFlags,
          examples: ['skein proxy get stats bookbuyer-5d8f -n bookbuyer', 'skein proxy get stats'],
          run: stats,
        },
      ],
    },
  ],
};
