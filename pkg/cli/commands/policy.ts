// `skein policy check`: pod → pod, pod → outside (`--to`), outside → pod
// (`--from-ip`). Exit 0 allowed, 1 denied, 2 anything else.

import { isIpAddress } from '../../catalog/egress.js';
import { buildMeshView } from '../../catalog/view.js';
import { DEFAULT_MESH_NAME } from '../../mesh/constants.js';
import type { Pod } from '../../model/objects.js';
import { validateManifest } from '../../registry/validate.js';
import { CONTROL_PLANE_NAMESPACE_FLAG, DEFAULT_CONTROL_PLANE_NAMESPACE } from '../controller.js';
import { checkEgress, egressText, meshServiceAt, parseEgressTarget } from '../egress-check.js';
import { CliError, UsageError } from '../errors.js';
import { checkIngress, hostWithoutPort, ingressText } from '../ingress-check.js';
import { Kube, kubeSelection } from '../kube.js';
import { MESH_NAME_FLAG, NAMESPACE_FLAG } from '../mesh-flags.js';
import { type PodRef, parsePodRef, readPod } from '../pods.js';
import { checkPolicy, policyText } from '../policy-check.js';
import { readMeshSnapshot } from '../snapshot.js';
import type { CommandSpec, FlagSpec, ParsedFlags, RunContext } from '../spec.js';

async function modelPod(kube: Kube, ref: PodRef): Promise<Pod> {
  const raw = await readPod(kube, ref);
  const result = validateManifest({ ...raw, apiVersion: 'v1', kind: 'Pod' }, { unknownFields: 'prune' });
  if (!result.ok || result.object.kind !== 'Pod')
    throw new CliError(
      `pod ${ref.namespace}/${ref.name} cannot be read as a pod: ${result.ok ? 'wrong kind' : result.reason}`,
    );
  return result.object;
}

const OUTPUTS = ['text', 'json'] as const;

function outputOf(flags: ParsedFlags): 'text' | 'json' {
  const o = flags.string('output') ?? 'text';
  if (o !== 'text' && o !== 'json') throw new UsageError(`--output ${JSON.stringify(o)}: use text or json`);
  return o;
}

/** `Name: value` (curl's form) into lower-cased names. */
function headersOf(flags: ParsedFlags): Record<string, string> {
  const out: Record<string, string> = {};
  for (const h of flags.strings('header')) {
    const colon = h.indexOf(':');
    if (colon <= 0) throw new UsageError(`--header ${JSON.stringify(h)}: use "Name: value"`);
    out[h.slice(0, colon).trim().toLowerCase()] = h.slice(colon + 1).trim();
  }
  return out;
}

/** Flags that belong to one form only, checked before anything is read. */
function checkFlagUse(flags: ParsedFlags): void {
  const to = flags.has('to');
  const from = flags.has('from-ip');
  if (to && from) throw new UsageError('--to and --from-ip ask different questions: give one of them');
  if (flags.has('address') && !to) throw new UsageError('--address goes with --to');
  for (const f of ['from-principal', 'sni', 'host', 'path'])
    if (flags.has(f) && !from) throw new UsageError(`--${f} goes with --from-ip`);
  if ((flags.has('method') || flags.has('header')) && !to && !from)
    throw new UsageError('--method and --header go with --to or --from-ip');
}

function exitCode(verdict: 'ALLOWED' | 'DENIED' | 'NOT_IN_MESH'): number {
  return verdict === 'ALLOWED' ? 0 : verdict === 'DENIED' ? 1 : 2;
}

async function check(ctx: RunContext): Promise<number> {
  const { flags } = ctx;
  const output = outputOf(flags);
  checkFlagUse(flags);
  const ns = flags.string('namespace');
  const mesh = flags.string('mesh-name') ?? DEFAULT_MESH_NAME;
  const kube = Kube.open(kubeSelection(flags, ctx.io.env));
  const headers = headersOf(flags);
  const method = flags.string('method');
  const to = flags.string('to');
  const fromIp = flags.string('from-ip');
  const target = to === undefined ? undefined : parseEgressTarget(to, flags.string('address'));
  if (fromIp !== undefined && !isIpAddress(fromIp))
    throw new UsageError(`--from-ip ${JSON.stringify(fromIp)} is not an IP address`);
  const refs = ctx.args.map((a) => parsePodRef(a, ns));
  const [pods, snapshot] = await Promise.all([
    Promise.all(refs.map((r) => modelPod(kube, r))),
    readMeshSnapshot(kube, mesh, flags.string('controller-namespace') ?? DEFAULT_CONTROL_PLANE_NAMESPACE),
  ]);
  for (const w of snapshot.warnings) ctx.io.err(`warning: ${w}\n`);
  const view = buildMeshView(snapshot.store, { meshName: mesh });
  const name = (i: number) => `${refs[i]?.namespace}/${refs[i]?.name}`;
  const [first, second] = pods;
  if (!first) throw new UsageError('no pod given');
  const print = (verdict: object, text: () => string) =>
    ctx.io.out(output === 'json' ? `${JSON.stringify(verdict, null, 2)}\n` : text());

  if (target) {
    const svc = meshServiceAt(view, target.host);
    if (svc)
      throw new CliError(
        `--to ${target.host} is the mesh service ${svc.key}, not a destination outside the mesh: ask about a pod behind it (skein policy check <src-pod> <dst-pod>)`,
      );
    const extras = method === undefined ? { headers } : { method, headers };
    const v = checkEgress(view, mesh, first, target, extras);
    print(v, () => egressText(v, name(0)));
    return exitCode(v.verdict);
  }
  if (fromIp !== undefined) {
    const host = flags.string('host');
    const source = {
      ip: fromIp.toLowerCase(),
      request: { path: flags.string('path') ?? '/', method: (method ?? 'GET').toUpperCase(), headers },
      ...(host !== undefined ? { host: hostWithoutPort(host) } : {}),
      ...(flags.has('from-principal') ? { principal: flags.string('from-principal') ?? '' } : {}),
      ...(flags.has('sni') ? { sni: (flags.string('sni') ?? '').toLowerCase() } : {}),
    };
    const v = checkIngress(view, mesh, source, first);
    print(v, () => ingressText(v, name(0)));
    return exitCode(v.verdict);
  }
  if (!second) throw new UsageError('policy check needs <src-pod> <dst-pod>');
  const v = checkPolicy(view, mesh, first, second);
  print(v, () => policyText(v, name(0), name(1)));
  return exitCode(v.verdict);
}

const flag = (
  name: string,
  valueName: string,
  description: string,
  extra: Partial<FlagSpec> = {},
): FlagSpec => ({
  name,
  type: 'string',
  valueName,
  description,
  ...extra,
});

const CHECK_FLAGS: readonly FlagSpec[] = [
  NAMESPACE_FLAG,
  MESH_NAME_FLAG,
  CONTROL_PLANE_NAMESPACE_FLAG,
  flag(
    'to',
    'url',
    'Destination outside the mesh: http://host[:port][/path], https://host[:port] (SNI), tcp://host:port or host:port',
    { complete: { kind: 'choices', values: ['http://', 'https://', 'tcp://'] } },
  ),
  flag('address', 'ip', 'With --to <name>: the address the pod resolves it to (for Egress ipAddresses)'),
  flag('from-ip', 'ip', "Source outside the mesh: an ingress controller's pod IP or any address"),
  flag('from-principal', 'san', 'With --from-ip: the SAN of its client certificate (AuthenticatedPrincipal)'),
  flag('sni', 'name', 'With --from-ip: the TLS SNI it sends (IngressBackend tls.sniHosts)'),
  flag('host', 'host', "With --from-ip: the request's Host header"),
  flag('path', 'path', 'With --from-ip: the request path', { defaultText: '/' }),
  flag('method', 'method', 'HTTP method of the request (--to http://…, --from-ip)', { defaultText: 'GET' }),
  flag('header', 'name: value', 'A request header (--to http://…, --from-ip)', { type: 'strings' }),
  flag('output', 'format', 'Output format: text or json', {
    short: 'o',
    defaultText: 'text',
    complete: { kind: 'choices', values: OUTPUTS },
  }),
];

export const policyCommand: CommandSpec = {
  name: 'policy',
  summary: 'Ask the policy engine about traffic between pods, and in and out of the mesh',
  subcommands: [
    {
      name: 'check',
      summary: 'May this traffic pass? Which TrafficTarget, Egress or IngressBackend decides?',
      description: [
        "Reads the mesh from the API server and evaluates it with skein's own policy engine:",
        '  <src-pod> <dst-pod>         pod to pod inside the mesh (TrafficTargets and their routes)',
        '  <src-pod> --to <url>        pod to a destination outside the mesh (Egress, MeshConfig enableEgress)',
        '  --from-ip <ip> <dst-pod>    a client outside the mesh to a pod (IngressBackend, Kubernetes Ingress)',
        'Exit status: 0 allowed, 1 denied, 2 error (or a pod not in the mesh).',
      ].join('\n'),
      argsUsage: '<src-pod> <dst-pod>',
      argsComplete: [{ kind: 'pod' }, { kind: 'pod' }],
      minArgs: 2,
      maxArgs: 2,
      argsForms: [
        {
          flag: 'to',
          argsUsage: '<src-pod> --to <url>',
          argsComplete: [{ kind: 'pod' }],
          minArgs: 1,
          maxArgs: 1,
        },
        {
          flag: 'from-ip',
          argsUsage: '--from-ip <ip> <dst-pod>',
          argsComplete: [{ kind: 'pod' }],
          minArgs: 1,
          maxArgs: 1,
        },
      ],
      flags: CHECK_FLAGS,
      examples: [
        'skein policy check bookbuyer/bookbuyer-5d8f bookstore/bookstore-v1-7c9',
        'skein policy check client server -n demo -o json',
        'skein policy check bookbuyer/bookbuyer-5d8f --to https://github.com',
        'skein policy check bookbuyer/bookbuyer-5d8f --to http://api.example.com/v1/books --method POST',
        'skein policy check bookbuyer/bookbuyer-5d8f --to tcp://10.1.0.5:5432',
        'skein policy check --from-ip 10.244.9.10 --host shop.example.com --path /books bookstore/bookstore-v1-7c9',
      ],
      run: check,
    },
  ],
};
