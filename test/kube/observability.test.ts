// The controller in Kubernetes mode against the test cluster: REST xDS only
// over mTLS (the plain HTTP port refuses and says where to go), --debug opens
// /debug/* without a MeshConfig opt-in, and /metrics lists the watch-restart
// and coalescing counters.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { CoreV1Api } from '@kubernetes/client-node';
import { BuiltinCA } from '../../pkg/certificate/builtin.js';
import { proxyCommonName } from '../../pkg/mesh/identity.js';
import { acquireCluster } from '../support/cluster.js';
import { type ClientCert, postHttps } from '../support/https.js';
import { type KubeController, startKubeController } from '../support/kube-controller.js';
import { prepareMeshCluster } from '../support/kube-registry-fixture.js';
import type { JsonLineProcess } from '../support/processes.js';

const sfx = randomBytes(3).toString('hex');
const MESH = `skein-obs-${sfx}`;
const CP = `skein-system-obs-${sfx}`;

const cn = (tail: number, sa: string) =>
  proxyCommonName({
    uuid: `00000000-0000-4000-8000-${tail.toString().padStart(12, '0')}`,
    kind: 'sidecar',
    serviceAccount: sa,
    namespace: 'shop',
    trustDomain: 'cluster.local',
  });
const A = cn(1, 'web');
const B = cn(2, 'api');

describe('observability of a Kubernetes-mode controller', { timeout: 120_000 }, () => {
  let release: (() => Promise<void>) | undefined;
  let core: CoreV1Api | undefined;
  let _controller: JsonLineProcess | undefined;
  let kubeController: KubeController | undefined;
  let http: number;
  let rest: number;
  let ca: BuiltinCA;

  before(async () => {
    const cluster = await acquireCluster();
    release = cluster.release;
    core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    await prepareMeshCluster(cluster.kubeConfig, core, CP);
    kubeController = await startKubeController({
      kubeconfigPath: cluster.endpoint.kubeconfigPath,
      meshName: MESH,
      namespace: CP,
      stateDirPrefix: 'skein-obs-',
      // --workload-files also writes the CA where this test can issue client certificates from it.
      args: ['--workload-files', '--debug'],
    });
    _controller = kubeController.process;
    const ready = kubeController.ready;
    http = Number(ready['http']);
    rest = Number(ready['restXds']);
    assert.ok(rest > 0, JSON.stringify(ready));
    ca = await BuiltinCA.loadOrCreate(path.join(kubeController.stateDir, 'ca'));
  });
  after(async () => {
    await kubeController?.stop();
    await core?.deleteNamespace({ name: CP }).catch(() => undefined);
    await release?.();
  });

  const https = (body: string, client?: ClientCert) =>
    postHttps({ port: rest, path: '/v3/discovery:clusters', ca: ca.trustBundlePem, body, client });

  test('the plain HTTP port refuses REST xDS and names the mTLS port', async () => {
    const res = await fetch(`http://127.0.0.1:${http}/v3/discovery:clusters`, {
      method: 'POST',
      body: JSON.stringify({ node: { id: A } }),
    });
    assert.equal(res.status, 403);
    assert.match(await res.text(), new RegExp(`REST xDS requires mTLS on port ${rest}`));
  });

  test('the HTTPS port: no certificate → 401, A asking for B → 403, A for itself → 200', async () => {
    const none = await https(JSON.stringify({ node: { id: A } }));
    assert.equal(none.status, 401);
    const certA = await ca.issue({ commonName: A, validityMs: 3_600_000, usage: 'client' });
    const other = await https(JSON.stringify({ node: { id: B } }), certA);
    assert.equal(other.status, 403);
    assert.match(other.body, /is not the client certificate's CN/);
    const own = await https(JSON.stringify({ node: { id: A } }), certA);
    assert.equal(own.status, 200, own.body);
    const json: unknown = JSON.parse(own.body);
    assert.ok(typeof json === 'object' && json !== null && 'type_url' in json);
    assert.equal(json.type_url, 'type.googleapis.com/envoy.config.cluster.v3.Cluster');
  });

  test('--debug opens /debug/* without a MeshConfig opt-in', async () => {
    const res = await fetch(`http://127.0.0.1:${http}/debug/proxies`);
    assert.equal(res.status, 200);
  });

  test('/metrics lists the watch-restart and coalescing counters', async () => {
    const text = await (await fetch(`http://127.0.0.1:${http}/metrics`)).text();
    assert.match(text, /^# TYPE skein_watch_restarts_total counter$/m);
    assert.match(text, /^skein_announcements_coalesced_total \d+$/m);
  });
});
