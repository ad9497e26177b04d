// Ingress into the mesh through a real Envoy sidecar (test/sidecar/mesh.ts):
// the backend pod is injected; "edge" pods in a namespace outside the mesh
// (no sidecar, their own network namespaces) stand in for a third-party
// ingress controller and call the backend's pod IP directly, as an ingress
// controller does. Every assertion is on traffic through the backend's Envoy
// or its admin stats, and `skein policy check --from-ip` must give the
// verdict Envoy gave for each case. Sources: an IPRange (http), an
// AuthenticatedPrincipal over mTLS (https), and the ingress controller's
// Service (its namespace joins the mesh uninjected).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { ENVOY_NEWEST, EnvoyProcess } from '../support/envoy-bin.js';
import { createNamespace } from '../support/kube.js';
import { eventually } from '../support/kube-registry-fixture.js';
import type { RunningPod } from '../support/pod-runner.js';
import { sleep } from '../support/processes.js';
import { APP_IMAGE, HTTP_PORT, MeshClient, SidecarMesh, sidecarSuiteSkipReason } from './mesh.js';
import { assertAllowedOnTheOpenConnection, firstJsonLine, KEEPALIVE_UNTIL_ALLOWED } from './scripts.js';

const sfx = randomBytes(3).toString('hex');
/** The name skein puts in the ingress controller's client certificate (MeshConfig ingressGateway). */
const INGRESS_SAN = `ingress.edge-${sfx}.cluster.local`;
const WITH_CERT = 10000;
const NO_CERT = 10001;

/**
 * A third-party ingress as a static Envoy: one plaintext listener per upstream
 * kind, each proxying everything to the backend pod over TLS that trusts the
 * mesh CA; WITH_CERT presents skein's ingress client certificate, NO_CERT none.
 * No SNI: a service's FQDN as SNI would select the backend's mesh chain instead.
 */
function edgeBootstrap(adminIp: string, backendIp: string, cert: { crt: string; key: string; ca: string }) {
  const router = {
    name: 'envoy.filters.http.router',
    typed_config: { '@type': 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router' },
  };
  const listener = (port: number, cluster: string) => ({
    name: cluster,
    address: { socket_address: { address: '127.0.0.1', port_value: port } },
    filter_chains: [
      {
        filters: [
          {
            name: 'envoy.filters.network.http_connection_manager',
            typed_config: {
              '@type':
                'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager',
              stat_prefix: cluster,
              route_config: {
                virtual_hosts: [
                  { name: 'all', domains: ['*'], routes: [{ match: { prefix: '/' }, route: { cluster } }] },
                ],
              },
              http_filters: [router],
            },
          },
        ],
      },
    ],
  });
  const cluster = (name: string, clientCert: boolean) => ({
    name,
    type: 'STATIC',
    connect_timeout: '2s',
    load_assignment: {
      cluster_name: name,
      endpoints: [
        {
          lb_endpoints: [
            { endpoint: { address: { socket_address: { address: backendIp, port_value: HTTP_PORT } } } },
          ],
        },
      ],
    },
    transport_socket: {
      name: 'envoy.transport_sockets.tls',
      typed_config: {
        '@type': 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext',
        common_tls_context: {
          tls_certificates: clientCert
            ? [{ certificate_chain: { inline_string: cert.crt }, private_key: { inline_string: cert.key } }]
            : [],
          validation_context: { trusted_ca: { inline_string: cert.ca } },
        },
      },
    },
  });
  return {
    admin: { address: { socket_address: { address: adminIp, port_value: 0 } } },
    static_resources: {
      listeners: [listener(WITH_CERT, 'with_cert'), listener(NO_CERT, 'no_cert')],
      clusters: [cluster('with_cert', true), cluster('no_cert', false)],
    },
  };
}
const skip = await sidecarSuiteSkipReason();

describe('ingress into the mesh through a real Envoy sidecar', { skip, timeout: 300_000 }, () => {
  let mesh: SidecarMesh;
  let backend: RunningPod;
  let edgeEnvoy: EnvoyProcess | undefined;
  const edge = new Map<string, { pod: RunningPod; client: MeshClient }>();
  const edgeNs = `edge-${sfx}`;

  async function startEdge(name: string): Promise<void> {
    await mesh.api.request('POST', `/api/v1/namespaces/${edgeNs}/pods`, {
      body: {
        metadata: { name, labels: { app: name } },
        spec: {
          nodeName: 'test-node',
          containers: [
            {
              name: 'app',
              image: APP_IMAGE,
              command: ['mesh-app', 'serve', '--name', name, '--http', String(HTTP_PORT)],
            },
          ],
        },
      },
    });
    const pod = await mesh.runner.run(edgeNs, name);
    edge.set(name, { pod, client: MeshClient.open(pod) });
  }
  const call = (from: string, path: string, host = 'shop.example.com') => {
    const e = edge.get(from);
    assert.ok(e);
    return e.client.http(`http://${backend.net.ip}:${HTTP_PORT}${path}`, 1, { headers: { host } });
  };
  /** Through the edge Envoy (in the ingress pod's network namespace) on one of its listeners. */
  const viaEdge = (port: number, path: string, host = 'shop.example.com') => {
    const e = edge.get('ingress');
    assert.ok(e);
    return e.client.http(`http://127.0.0.1:${port}${path}`, 1, { headers: { host } });
  };
  const ingressBackend = (spec: Record<string, unknown>) =>
    mesh.apply('policy.skein.dev', 'v1alpha1', 'ingressbackends', {
      apiVersion: 'policy.skein.dev/v1alpha1',
      kind: 'IngressBackend',
      metadata: { name: 'web', namespace: mesh.namespace },
      spec,
    });
  /** Ingress `web`: host shop.example.com, the given Prefix paths to the web service. */
  const webIngress = (paths: string[]) =>
    mesh.apply('networking.k8s.io', 'v1', 'ingresses', {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'Ingress',
      metadata: { name: 'web', namespace: mesh.namespace },
      spec: {
        rules: [
          {
            host: 'shop.example.com',
            http: {
              paths: paths.map((path) => ({
                path,
                pathType: 'Prefix',
                backend: { service: { name: 'web', port: { number: HTTP_PORT } } },
              })),
            },
          },
        ],
      },
    });
  // A 200 is counted with the pod that answered: only web-1 serves here.
  const ok = (o: { counts: Record<string, number> }) => (o.counts['200 web-1'] ?? 0) === 1;
  /** `skein policy check --from-ip <ip> … web-1` on the same mesh: its verdict, with the exit code to match. */
  const policy = async (ip: string, path: string, extra: string[] = [], host = 'shop.example.com') => {
    const args = ['--from-ip', ip, '--host', host, '--path', path, ...extra, `${mesh.namespace}/web-1`];
    const r = await mesh.policyCheck(args);
    assert.equal(r.code, r.verdict === 'ALLOWED' ? 0 : 1, r.out);
    return r.verdict;
  };

  before(async () => {
    mesh = await SidecarMesh.start(`ing${sfx}`);
    await mesh.setMeshConfig({
      traffic: { permissive: false },
      certificate: {
        ingressGateway: {
          subjectAltNames: [INGRESS_SAN],
          secret: { name: 'ingress-cert', namespace: edgeNs },
        },
      },
    });
    backend = await mesh.startHttpBackend('web');
    await createNamespace(mesh.core, edgeNs);
    await startEdge('ingress');
    await startEdge('stranger');
  });

  after(async () => {
    await edgeEnvoy?.stop();
    for (const e of edge.values()) await e.client.close().catch(() => undefined);
    await mesh?.api.request('DELETE', `/api/v1/namespaces/${edgeNs}`).catch(() => undefined);
    await mesh?.stop();
  });

  test('http: no IngressBackend → refused; allowed from the ingress IP only, on the Ingress paths only', async () => {
    assert.ok(!ok(await call('ingress', '/books')), 'SMI mode without IngressBackend');
    const ingressIp = edge.get('ingress')?.pod.net.ip ?? '';
    assert.equal(await policy(ingressIp, '/books'), 'DENIED');
    await ingressBackend({
      backends: [{ name: 'web', port: { number: HTTP_PORT, protocol: 'http' } }],
      sources: [{ kind: 'IPRange', name: `${ingressIp}/32` }],
    });
    await webIngress(['/books']);
    // An IngressBackend alone admits every path; the two objects reach the
    // sidecar through separate watchers, so wait until both are in force.
    await eventually(
      'the ingress is admitted on its paths only',
      async () => {
        assert.ok(ok(await call('ingress', '/books/1')));
        const otherPath = await call('ingress', '/admin');
        assert.equal(otherPath.counts['403'], 1, JSON.stringify(otherPath));
      },
      30_000,
    );
    assert.ok(ok(await call('ingress', '/books')));
    assert.equal((await call('ingress', '/booksx')).counts['403'], 1, 'Prefix is element-wise');
    assert.equal((await call('ingress', '/books', 'evil.example.com')).counts['403'], 1, 'another host');
    assert.ok(!ok(await call('stranger', '/books')), 'another source IP');
    const stats = await backend.envoyStats('ingress_8080_http');
    assert.ok((stats.get('http.ingress_8080_http.rbac.allowed') ?? 0) >= 2, JSON.stringify([...stats]));
    assert.ok((stats.get('http.ingress_8080_http.rbac.denied') ?? 0) >= 3, JSON.stringify([...stats]));
    // skein policy check agrees with what the backend's Envoy did, case by case.
    const strangerIp = edge.get('stranger')?.pod.net.ip ?? '';
    assert.deepEqual(
      [
        await policy(ingressIp, '/books/1'),
        await policy(ingressIp, '/books'),
        await policy(ingressIp, '/admin'),
        await policy(ingressIp, '/booksx'),
        await policy(ingressIp, '/books', [], 'evil.example.com'),
        await policy(strangerIp, '/books'),
      ],
      ['ALLOWED', 'ALLOWED', 'DENIED', 'DENIED', 'DENIED', 'DENIED'],
    );
  });

  test("an Ingress path added reaches the ingress controller's open connection: the policy is on the route config, no chain is drained", async () => {
    // An ingress controller keeps its connections to a backend open. The chain's policy
    // lives on its route config (rds-ingress.<port>.http), so an edit of the paths is an
    // RDS update that the next request on the same connection meets; were it in the
    // chain, the open connection would keep the old policy until Envoy drained it.
    const ingressPod = edge.get('ingress')?.pod;
    assert.ok(ingressPod);
    const result = ingressPod
      .execText('app', [
        process.execPath,
        '-e',
        KEEPALIVE_UNTIL_ALLOWED('shop.example.com', `http://${backend.net.ip}:${HTTP_PORT}/admin`),
      ])
      .then(firstJsonLine);
    // The script's first calls are denied on its connection before the path exists.
    await sleep(2000);
    await webIngress(['/books', '/admin']);
    try {
      assertAllowedOnTheOpenConnection(await result);
    } finally {
      await webIngress(['/books']);
    }
    await eventually('/admin denied again', async () => {
      assert.equal((await call('ingress', '/admin')).counts['403'], 1);
    });
  });

  test('https: mTLS from a third-party edge Envoy with the client certificate skein issued', async () => {
    const ingressPod = edge.get('ingress')?.pod;
    assert.ok(ingressPod);
    // skein writes the certificate as a kubernetes.io/tls Secret where the MeshConfig says.
    let secret: Record<string, string> = {};
    await eventually(
      'the ingress client certificate Secret',
      async () => {
        const got = (await mesh.api.request('GET', `/api/v1/namespaces/${edgeNs}/secrets/ingress-cert`)) as {
          type?: string;
          data?: Record<string, string>;
        };
        assert.equal(got.type, 'kubernetes.io/tls');
        secret = got.data ?? {};
      },
      20_000,
    );
    const pem = (k: string) => Buffer.from(secret[k] ?? '', 'base64').toString('utf8');
    const cert = { crt: pem('tls.crt'), key: pem('tls.key'), ca: pem('ca.crt') };
    assert.match(cert.crt, /BEGIN CERTIFICATE/);
    edgeEnvoy = await EnvoyProcess.start(
      ENVOY_NEWEST,
      JSON.stringify(edgeBootstrap(ingressPod.net.ip, backend.net.ip, cert)),
      { netns: ingressPod.net.netns, logLevel: 'warning', concurrency: 1 },
    );
    await edgeEnvoy.live();

    const ingressIp = ingressPod.net.ip;
    await ingressBackend({
      backends: [{ name: 'web', port: { number: HTTP_PORT, protocol: 'https' } }],
      sources: [
        { kind: 'IPRange', name: `${ingressIp}/32` },
        { kind: 'AuthenticatedPrincipal', name: INGRESS_SAN },
      ],
    });
    await eventually(
      'mTLS ingress admitted',
      async () => assert.ok(ok(await viaEdge(WITH_CERT, '/books/1'))),
      30_000,
    );
    assert.equal(
      (await viaEdge(WITH_CERT, '/admin')).counts['403'],
      1,
      'RBAC on the https chain: Ingress paths',
    );
    // The edge's upstream handshake fails without a client certificate: Envoy answers 503.
    const noCert = await viaEdge(NO_CERT, '/books/1');
    assert.equal(noCert.counts['503'], 1, JSON.stringify(noCert));
    assert.ok(!ok(await call('ingress', '/books/1')), 'plaintext no longer admitted on an https backend');
    // With skein's certificate admitted; without it the handshake already fails (the CLI says why).
    assert.equal(await policy(ingressIp, '/books/1', ['--from-principal', INGRESS_SAN]), 'ALLOWED');
    assert.equal(await policy(ingressIp, '/books/1'), 'DENIED');
    const ssl = await backend.envoyStats('ssl\\.');
    const sum = (suffix: string) =>
      [...ssl]
        .filter(([k]) => k.startsWith('listener.') && k.endsWith(suffix))
        .reduce((a, [, v]) => a + v, 0);
    assert.ok(sum('.ssl.handshake') >= 1, JSON.stringify([...ssl]));
    assert.ok(sum('.ssl.fail_verify_no_cert') >= 1, JSON.stringify([...ssl]));
    const rbac = await backend.envoyStats('ingress_8080_https');
    assert.ok((rbac.get('http.ingress_8080_https.rbac.allowed') ?? 0) >= 1, JSON.stringify([...rbac]));
    const edgeStats = await edgeEnvoy.stats('cluster\\.(with|no)_cert\\.ssl\\.');
    assert.ok((edgeStats.get('cluster.with_cert.ssl.handshake') ?? 0) >= 1, JSON.stringify([...edgeStats]));
    console.log(
      `ingress https: backend listener ssl.handshake=${sum('.ssl.handshake')} fail_verify_no_cert=${sum('.ssl.fail_verify_no_cert')}; ` +
        `edge cluster.with_cert.ssl.handshake=${edgeStats.get('cluster.with_cert.ssl.handshake')}`,
    );

    // skipClientCertValidation: TLS without a client certificate is accepted (principals need it, so IP only).
    await ingressBackend({
      backends: [
        {
          name: 'web',
          port: { number: HTTP_PORT, protocol: 'https' },
          tls: { skipClientCertValidation: true },
        },
      ],
      sources: [{ kind: 'IPRange', name: `${ingressIp}/32` }],
    });
    await eventually(
      'TLS without a client certificate',
      async () => assert.ok(ok(await viaEdge(NO_CERT, '/books/1'))),
      30_000,
    );
    assert.ok(ok(await viaEdge(WITH_CERT, '/books/1')), 'a client certificate is still fine');
  });

  test('http: a Service source (the ingress controller Service, its namespace in the mesh, uninjected) admitted; another source refused', async () => {
    const ingressIp = edge.get('ingress')?.pod.net.ip ?? '';
    const strangerIp = edge.get('stranger')?.pod.net.ip ?? '';
    // docs/policy.md: a Service source must be in a monitored namespace; injection off there.
    await mesh.api.request('PATCH', `/api/v1/namespaces/${edgeNs}`, {
      contentType: 'application/merge-patch+json',
      body: {
        metadata: {
          labels: { 'skein.dev/monitored-by': mesh.meshName },
          annotations: { 'skein.dev/sidecar-injection': 'disabled' },
        },
      },
    });
    await mesh.api.request('POST', `/api/v1/namespaces/${edgeNs}/services`, {
      body: {
        metadata: { name: 'ingress-controller' },
        spec: { selector: { app: 'ingress' }, ports: [{ name: 'http', port: 80, targetPort: HTTP_PORT }] },
      },
    });
    await ingressBackend({
      backends: [{ name: 'web', port: { number: HTTP_PORT, protocol: 'http' } }],
      sources: [{ kind: 'Service', name: 'ingress-controller', namespace: edgeNs }],
    });
    // The Service's endpoints (the EndpointSlice controller) and the IngressBackend arrive separately.
    await eventually(
      'the Service source resolves to the ingress pod',
      async () => assert.ok(ok(await call('ingress', '/books/1'))),
      60_000,
    );
    const rbac = async () => {
      const s = await backend.envoyStats('http\\.ingress_8080_http\\.rbac\\.allowed');
      return s.get('http.ingress_8080_http.rbac.allowed') ?? 0;
    };
    const noChain = async () => {
      const s = await backend.envoyStats('no_filter_chain_match');
      return [...s].filter(([k]) => k.startsWith('listener.')).reduce((a, [, v]) => a + v, 0);
    };
    const [a0, n0] = [await rbac(), await noChain()];
    assert.ok(ok(await call('ingress', '/books/2')));
    assert.equal((await call('ingress', '/admin')).counts['403'], 1, 'the Ingress paths still apply');
    const stranger = await call('stranger', '/books/2');
    assert.ok(!ok(stranger), JSON.stringify(stranger));
    const [a1, n1] = [await rbac(), await noChain()];
    assert.equal(a1, a0 + 1, 'one request allowed by the ingress chain RBAC');
    assert.ok(n1 >= n0 + 1, `the stranger matched no filter chain (${n0} → ${n1})`);
    console.log(
      `ingress Service source: rbac.allowed ${a0}→${a1}; inbound no_filter_chain_match ${n0}→${n1}; stranger ${JSON.stringify(stranger)}`,
    );
    // /debug/policies names the Service source and what it resolved to.
    const pol = (await mesh.debug('policies')) as {
      ingress: { service: string; cidrs: string[]; policies: { from: { kind: string; name: string }[] }[] }[];
    };
    const web = pol.ingress.find((i) => i.service === `${mesh.namespace}/web`);
    assert.deepEqual(web?.cidrs, [`${ingressIp}/32`], JSON.stringify(pol.ingress));
    assert.deepEqual(
      web?.policies[0]?.from.map((f) => `${f.kind} ${f.name}`),
      [`Service ${edgeNs}/ingress-controller`],
    );
    assert.deepEqual(
      [await policy(ingressIp, '/books/2'), await policy(strangerIp, '/books/2')],
      ['ALLOWED', 'DENIED'],
    );
  });

  test('permissive mode: a pod outside the mesh reaches the backend in plaintext from any address, no IngressBackend needed', async () => {
    // The stranger's address is in no IngressBackend: in SMI mode no chain takes it.
    assert.ok(!ok(await call('stranger', '/admin')), 'SMI mode');
    await mesh.setPermissive(true);
    try {
      await eventually('the stranger is served in permissive mode', async () => {
        assert.ok(ok(await call('stranger', '/admin')));
      });
      // Served by the plaintext chain, whose routes came over RDS (rds-inbound-plaintext.<port>).
      const stats = await backend.envoyStats('inbound-plaintext_');
      const served = stats.get(`http.inbound-plaintext_${HTTP_PORT}.downstream_rq_completed`) ?? 0;
      assert.ok(served >= 1, JSON.stringify([...stats]));
      const routes = await backend.envoyStats('rds\\.rds-inbound-plaintext');
      assert.ok(
        (routes.get(
          `http.inbound-plaintext_${HTTP_PORT}.rds.rds-inbound-plaintext.${HTTP_PORT}.update_success`,
        ) ?? 0) >= 1,
        JSON.stringify([...routes]),
      );
    } finally {
      await mesh.setPermissive(false);
    }
    await eventually('the stranger refused again in SMI mode', async () => {
      assert.ok(!ok(await call('stranger', '/admin')));
    });
  });
});
