// `skein ca rotate` and `skein ca status`: a root CA rotation is asked for by
// writing the request into the CA record the controller keeps (the Secret in
// Kubernetes mode, <state>/ca in local mode) — the write is what RBAC guards,
// not an unauthenticated HTTP call — and followed on /debug/certs.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { BuiltinCA } from '../../certificate/builtin.js';
import { type CARecordStore, LocalCARecordStore } from '../../certificate/ca-store.js';
import { KubeSecretCARecordStore } from '../../certificate/kube-secret-store.js';
import { type RotationStatus, stageNumber } from '../../certificate/rotation.js';
import {
  CONTROL_PLANE_NAMESPACE_FLAG,
  CONTROLLER_URL_FLAG,
  controllerEndpoint,
  controllerJson,
  DEFAULT_CONTROL_PLANE_NAMESPACE,
  LOCAL_FLAG,
} from '../controller.js';
import { CliError, errorMessage } from '../errors.js';
import { Kube, kubeSelection, record } from '../kube.js';
import type { CommandSpec, RunContext } from '../spec.js';

const CA_SECRET_FLAG = {
  name: 'ca-secret',
  type: 'string',
  valueName: 'name',
  description: "The controller's CA Secret in the control-plane namespace (its --ca-secret)",
  defaultText: 'skein-ca',
} as const;
const STATE_DIR_FLAG = {
  name: 'state-dir',
  type: 'string',
  valueName: 'dir',
  description: "Local mode: the controller's --state-dir (the record is <dir>/ca)",
  complete: { kind: 'file' },
} as const;

function recordStore(ctx: RunContext): CARecordStore {
  const stateDir = ctx.flags.string('state-dir');
  if (stateDir !== undefined) return new LocalCARecordStore(path.join(stateDir, 'ca'));
  const kube = Kube.open(kubeSelection(ctx.flags, ctx.io.env));
  const ns = ctx.flags.string('controller-namespace') ?? DEFAULT_CONTROL_PLANE_NAMESPACE;
  return new KubeSecretCARecordStore(kube.client, ns, ctx.flags.string('ca-secret') ?? 'skein-ca');
}

/** The new root the user brings (--cert/--key), checked as the controller will check it. */
async function broughtRoot(ctx: RunContext): Promise<{ certPem: string; keyPem: string } | undefined> {
  const certFile = ctx.flags.string('cert');
  const keyFile = ctx.flags.string('key');
  if (certFile === undefined && keyFile === undefined) return undefined;
  if (certFile === undefined || keyFile === undefined)
    throw new CliError('--cert and --key go together: the new root certificate and its private key (PEM)');
  const [certPem, keyPem] = await Promise.all([readFile(certFile, 'utf8'), readFile(keyFile, 'utf8')]);
  try {
    const root = await BuiltinCA.fromPem(certPem, keyPem);
    return { certPem: root.rootCertPem, keyPem: root.rootKeyPem };
  } catch (err) {
    throw new CliError(`${certFile} and ${keyFile} cannot be the new root: ${errorMessage(err)}`);
  }
}

async function rotate(ctx: RunContext): Promise<number> {
  const next = await broughtRoot(ctx);
  const store = recordStore(ctx);
  for (let attempt = 0; attempt < 5; attempt++) {
    const found = await store.load();
    if (!found)
      throw new CliError(`${store.description} holds no CA: is the controller installed and started?`);
    const rec = found.record;
    if (rec.rotation)
      throw new CliError(
        `a root rotation is already in stage ${stageNumber(rec.rotation.stage)} (${rec.rotation.stage}); follow it with \`skein ca status --watch\``,
      );
    const requested = { active: rec.active, requested: { at: Date.now() }, ...(next ? { next } : {}) };
    if (await store.save(requested, found.version)) {
      ctx.io.out(
        `root rotation requested in ${store.description}${next ? ' with the root you brought' : ' (the controller creates the new root)'}; the leader begins it within seconds\n`,
      );
      return ctx.flags.boolean('wait') ? follow(ctx, true) : 0;
    }
  }
  throw new CliError(`${store.description} kept changing while the request was written; try again`);
}

function statusText(s: RotationStatus): string {
  const lines = [`stage: ${stageNumber(s.stage === 'idle' ? undefined : s.stage)} (${s.stage})`];
  for (const r of s.roots)
    lines.push(
      `root:  ${r.subject.replace(/\n/g, ', ')}  sha256 ${r.fingerprint.slice(0, 23)}…  until ${r.notAfter}${r.issuing ? '  (issuing)' : ''}`,
    );
  if (s.stageSince) lines.push(`since: ${s.stageSince}`);
  if (s.pending)
    lines.push(
      `pending: ${s.pending.proxies} proxies, ${s.pending.leaves} leaves, ${s.pending.files} Secrets/files`,
    );
  if (s.waitingFor) lines.push(`waiting: ${s.waitingFor}`);
  // Several replicas: each one's own proxies (docs/certificates.md, "Several replicas").
  for (const r of s.replicas ?? [])
    lines.push(
      `replica ${r.replica}${r.self ? ' (this one)' : ''}: ${r.current ? `${r.proxies} of ${r.connected} proxies behind, ${r.leaves} leaves, ${r.files} Secrets/files${r.ready ? ', ready' : ''}` : `still on ${r.stage.split('@')[0]}`}`,
    );
  if (s.requestedAt) lines.push(`requested: ${s.requestedAt}`);
  if (s.lastError) lines.push(`error: ${s.lastError}`);
  return `${lines.join('\n')}\n`;
}

/** Prints the status; with `untilDone`, every change until the rotation has ended. */
async function follow(ctx: RunContext, untilDone: boolean): Promise<number> {
  const ep = await controllerEndpoint(ctx);
  try {
    let last = '';
    let seenRunning = false;
    let firstIssuer: string | undefined;
    for (;;) {
      const body = record(await controllerJson(ep, '/debug/certs'));
      const ca = body['ca'] as RotationStatus | null | undefined;
      if (!ca) throw new CliError(`the controller at ${ep.via} has no CA loaded yet`);
      const text = statusText(ca);
      if (text !== last) ctx.io.out(`${last === '' ? '' : '\n'}${new Date().toISOString()}\n${text}`);
      last = text;
      if (ca.lastError) return 1;
      // A rotation may run through between two polls: a new issuing root says it did.
      const issuer = ca.roots.find((r) => r.issuing)?.fingerprint;
      firstIssuer ??= issuer;
      if (ca.stage !== 'idle' || issuer !== firstIssuer) seenRunning = true;
      if (!untilDone || (seenRunning && ca.stage === 'idle' && !ca.requestedAt)) return 0;
      if (ctx.io.signal.aborted) return 130;
      await new Promise((r) => setTimeout(r, 1000));
    }
  } finally {
    await ep.close();
  }
}

const FOLLOW_FLAGS = [CONTROLLER_URL_FLAG, LOCAL_FLAG, CONTROL_PLANE_NAMESPACE_FLAG];

export const caCommand: CommandSpec = {
  name: 'ca',
  summary: "Rotate the mesh's root CA and follow the rotation",
  subcommands: [
    {
      name: 'rotate',
      summary: 'Rotate the root CA in three stages (distribute, reissue, retire)',
      description:
        'Writes a rotation request into the CA record; the leading controller begins it: stage 1 adds\n' +
        'the new root to every trust bundle, stage 2 reissues every certificate from it, stage 3 drops\n' +
        'the old root. Each stage ends only when every proxy, Secret and file holds it (docs/certificates.md).\n' +
        'With --cert/--key the new root is yours (bring your own root); without, the controller creates one.',
      flags: [
        {
          name: 'cert',
          type: 'string',
          valueName: 'file',
          description: 'PEM certificate of the new root (bring your own)',
          complete: { kind: 'file' },
        },
        {
          name: 'key',
          type: 'string',
          valueName: 'file',
          description: 'PEM private key of the new root',
          complete: { kind: 'file' },
        },
        { name: 'wait', type: 'boolean', description: 'Follow the rotation until it completes' },
        CA_SECRET_FLAG,
        STATE_DIR_FLAG,
        ...FOLLOW_FLAGS,
      ],
      examples: [
        'skein ca rotate --wait',
        'skein ca rotate --cert new-root.crt --key new-root.key',
        'skein ca rotate --state-dir ~/.skein --local --wait',
      ],
      maxArgs: 0,
      run: rotate,
    },
    {
      name: 'status',
      summary: 'Show the roots, the rotation stage and what it waits for',
      description:
        'Reads /debug/certs of a controller. With several replicas it shows a line per replica: how many\n' +
        'of the proxies connected to it do not hold the stage yet (each replica reports its own).',
      flags: [
        { name: 'watch', type: 'boolean', description: 'Follow until the rotation ends' },
        ...FOLLOW_FLAGS,
      ],
      maxArgs: 0,
      run: (ctx) => follow(ctx, ctx.flags.boolean('watch')),
    },
  ],
};
