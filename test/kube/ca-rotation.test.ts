// Root CA rotation against the real API server: a root the user brings in the
// CA Secret, a bad new root refused (by the CLI, and by the controller when
// written behind the CLI's back), a controller that died in stage 2 resuming
// from the Secret without running stage 1 again, and the ADS port's client
// trust following the stages (old-root client certificates accepted until the
// old root is retired, refused after). Traffic through real proxies across a
// rotation: test/sidecar/root-rotation.test.ts, test/e2e/root-rotation.test.ts.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes, X509Certificate } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { CoreV1Api } from '@kubernetes/client-node';
import { BuiltinCA } from '../../pkg/certificate/builtin.js';
import { KubeSecretCARecordStore } from '../../pkg/certificate/kube-secret-store.js';
import { TypeUrl } from '../../pkg/envoy/types.js';
import { proxyCommonName, spiffeId } from '../../pkg/mesh/identity.js';
import { KubeClient } from '../../pkg/registry/kube/client.js';
import { acquireCluster, type ClusterEndpoint } from '../support/cluster.js';
import { type KubeController, startKubeController } from '../support/kube-controller.js';
import { eventually, prepareMeshCluster } from '../support/kube-registry-fixture.js';
import { repoRoot } from '../support/local-mesh.js';
import { RawAdsClient } from '../support/xds/test-client.js';

const skeinCli = path.join(repoRoot, 'dist', 'cmd', 'skein', 'main.js');
const sfx = randomBytes(3).toString('hex');
const CP = `skein-ca-${sfx}`;

interface CaStatus {
  stage: string;
  roots: { fingerprint: string; issuing: boolean }[];
  lastError?: string;
}

const fingerprint = (pem: string) => new X509Certificate(pem).fingerprint256;

describe('root CA rotation against the real API server', { timeout: 180_000 }, () => {
  let endpoint: ClusterEndpoint;
  let release: () => Promise<void>;
  let api: KubeClient;
  let store: KubeSecretCARecordStore;
  let controller: KubeController | undefined;
  let dir: string;
  let byo: BuiltinCA;

  const start = async () => {
    controller = await startKubeController({
      kubeconfigPath: endpoint.kubeconfigPath,
      meshName: `ca-${sfx}`,
      namespace: CP,
      args: ['--debug', '--ca-rotation-delivery', '1s'],
    });
    return controller;
  };
  const httpUrl = () => `http://127.0.0.1:${Number(controller?.ready['http'])}`;
  const caStatus = async () =>
    ((await (await fetch(`${httpUrl()}/debug/certs`)).json()) as { ca: CaStatus }).ca;
  const skein = async (args: string[]) => {
    const argv = [skeinCli, ...args, '--kubeconfig', endpoint.kubeconfigPath, '--controller-namespace', CP];
    const child = spawn(process.execPath, [...argv, '--controller-url', httpUrl()], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (out += d));
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    return { code, out };
  };
  /** `skein ca rotate --cert <dir>/<cert> --key <dir>/<key>` plus `more`. */
  const rotateWith = (cert: string, key: string, ...more: string[]) =>
    skein(['ca', 'rotate', '--cert', path.join(dir, cert), '--key', path.join(dir, key), ...more]);
  /** Whether the ADS port completes an mTLS exchange for a client certificate from `root`. */
  const adsAccepts = async (root: BuiltinCA, trust: string): Promise<boolean> => {
    const proxy = { uuid: '00000000-0000-4000-8000-0000000000aa', namespace: 'shop', serviceAccount: 'web' };
    const cn = proxyCommonName({ kind: 'sidecar', ...proxy, trustDomain: 'cluster.local' });
    const cert = await root.issue({
      commonName: cn,
      uriSans: [spiffeId(proxy, 'cluster.local')],
      validityMs: 600_000,
      usage: 'client',
    });
    const credentials = grpc.credentials.createSsl(
      Buffer.from(trust),
      Buffer.from(cert.keyPem),
      Buffer.from(cert.certPem),
    );
    const client = new RawAdsClient({
      address: `localhost:${Number(controller?.ready['ads'])}`,
      credentials,
    });
    try {
      client.send({ typeUrl: TypeUrl.Cluster, node: { id: cn, cluster: 'x' }, resourceNames: [] });
      await client.next(5000);
      return true;
    } catch {
      return false;
    } finally {
      client.close();
    }
  };

  before(async () => {
    let kubeConfig: Parameters<typeof prepareMeshCluster>[0];
    ({ endpoint, kubeConfig, release } = await acquireCluster());
    await prepareMeshCluster(kubeConfig, kubeConfig.makeApiClient(CoreV1Api), CP);
    api = new KubeClient({ kubeConfig });
    store = new KubeSecretCARecordStore(api, CP, 'skein-ca');
    dir = await mkdtemp(path.join(tmpdir(), 'skein-ca-rotation-'));
    // Bring your own root: the Secret exists before the controller first starts.
    byo = await BuiltinCA.create({ commonName: 'my-org-root' });
    await api.request('POST', `/api/v1/namespaces/${CP}/secrets`, {
      body: {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'skein-ca', namespace: CP },
        data: {
          'ca.crt': Buffer.from(byo.rootCertPem).toString('base64'),
          'ca.key': Buffer.from(byo.rootKeyPem).toString('base64'),
        },
      },
    });
    await start();
  });
  after(async () => {
    await controller?.stop();
    await rm(dir, { recursive: true, force: true });
    await release?.();
  });

  test('the root the user brought is the one the mesh trusts and issues from', async () => {
    const s = await caStatus();
    assert.equal(s.stage, 'idle');
    assert.deepEqual(
      s.roots.map((r) => [r.fingerprint, r.issuing]),
      [[fingerprint(byo.rootCertPem), true]],
    );
    assert.equal(await adsAccepts(byo, byo.rootCertPem), true);
  });

  test('a bad new root is refused: by the CLI, and by the controller when written around it', async () => {
    const [a, b] = await Promise.all([BuiltinCA.create(), BuiltinCA.create()]);
    await writeFile(path.join(dir, 'a.crt'), a.rootCertPem);
    await writeFile(path.join(dir, 'b.key'), b.rootKeyPem);
    const cli = await rotateWith('a.crt', 'b.key');
    assert.notEqual(cli.code, 0);
    assert.match(cli.out, /cannot be the new root: CA key does not match the CA certificate/);
    // Behind the CLI's back: the controller checks the pair again and records why it refused.
    const found = await store.load();
    assert.ok(found);
    const bad = {
      ...found.record,
      next: { certPem: a.rootCertPem, keyPem: b.rootKeyPem },
      requested: { at: Date.now() },
    };
    assert.equal(await store.save(bad, found.version), true);
    assert.equal(
      await store.save(bad, found.version),
      false,
      'a write at a stale resourceVersion is refused (409)',
    );
    await eventually(
      'the controller refused the request',
      async () =>
        assert.match((await caStatus()).lastError ?? '', /root rotation refused: CA key does not match/),
      15_000,
    );
    const after = await store.load();
    assert.equal(after?.record.next, undefined);
    assert.equal(after?.record.rotation, undefined);
    assert.equal((await caStatus()).roots.length, 1);
  });

  test('a controller that died in stage 2 resumes it from the Secret; the ADS port drops the old root only at the end', async () => {
    const next = await BuiltinCA.create({ commonName: 'my-org-root-2' });
    await controller?.stop();
    // What a controller killed in stage 2 leaves behind.
    const found = await store.load();
    assert.ok(found);
    const startedAt = Date.now() - 60_000;
    const inStage2 = {
      active: found.record.active,
      next: { certPem: next.rootCertPem, keyPem: next.rootKeyPem },
      rotation: { stage: 'reissue' as const, startedAt, stageSince: startedAt + 30_000 },
    };
    assert.equal(await store.save(inStage2, found.version), true);
    const c = await start();
    const loaded = c.process.lines.find((l) => l['msg'] === 'CA loaded');
    assert.equal(loaded?.['stage'], 'reissue', 'the new controller loaded the rotation in stage 2');
    await eventually(
      'the rotation completed',
      async () => {
        const s = await caStatus();
        assert.equal(s.stage, 'idle');
        assert.deepEqual(
          s.roots.map((r) => r.fingerprint),
          [fingerprint(next.rootCertPem)],
        );
      },
      30_000,
    );
    const stages = c.process.lines
      .filter((l) => String(l['msg']).startsWith('root rotation'))
      .map((l) => l['msg']);
    assert.deepEqual(stages, [
      'root rotation: stage reissue complete',
      'root rotation complete: the old root is retired',
    ]);
    const done = await store.load();
    assert.equal(fingerprint(done?.record.active.certPem ?? ''), fingerprint(next.rootCertPem));
    // The ADS server presents a certificate of the new root and trusts client certificates of it only.
    assert.equal(await adsAccepts(next, next.rootCertPem), true, 'a client of the new root connects');
    assert.equal(await adsAccepts(byo, next.rootCertPem), false, 'a client of the retired root is refused');
  });

  test('skein ca rotate --cert/--key --wait: a root the user brings, through all three stages', async () => {
    const mine = await BuiltinCA.create({ commonName: 'my-org-root-3' });
    await writeFile(path.join(dir, 'mine.crt'), mine.rootCertPem);
    await writeFile(path.join(dir, 'mine.key'), mine.rootKeyPem);
    const r = await rotateWith('mine.crt', 'mine.key', '--wait');
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, /with the root you brought/);
    assert.match(r.out, /stage: 0 \(idle\)[\s\S]*issuing/);
    const s = await caStatus();
    assert.deepEqual(
      s.roots.map((x) => x.fingerprint),
      [fingerprint(mine.rootCertPem)],
    );
    assert.equal(await adsAccepts(mine, mine.rootCertPem), true);
    const metrics = await (await fetch(`${httpUrl()}/metrics`)).text();
    assert.match(metrics, /^skein_ca_rotation_stage 0$/m);
    assert.match(metrics, /^skein_ca_rotation_pending 0$/m);
  });
});
