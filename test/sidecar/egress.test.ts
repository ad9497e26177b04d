// Egress through real Envoy sidecars: servers in a network namespace outside
// the mesh (on the pod bridge, no mesh Service, no sidecar) — a plain HTTP
// server, a TLS server with its own CA (the client verifies the name it sent
// as SNI), a server-first TCP server that greets first. SMI mode, two
// identities: `buyer` is the source of three Egress objects, `thief` of none.
// Every call is made by the app (uid 1000, redirected to Envoy by iptables);
// reasons are read from Envoy's own stats, and `skein policy check --to` must
// give the verdict Envoy gave for each case. The last tests give later pods
// MeshConfig interception lists (exclusion, then inclusion) that take the
// outside server out of Envoy's path, and show the earlier pods keep theirs.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { run } from '../support/pod-network.js';
import { type RunningPod, until } from '../support/pod-runner.js';
import { HTTP_PORT, type PodSpec, SERVICE_CIDR, SidecarMesh, sidecarSuiteSkipReason } from './mesh.js';

const sfx = randomBytes(3).toString('hex');
const skip = await sidecarSuiteSkipReason();

const PLAIN = 'plain.outside.test';
const SECURE = 'secure.outside.test';
const HTTP_EGRESS = 80;
const TLS_EGRESS = 443;
const SMTP_PORT = 2525;

/** Node scripts the app container runs (`kubectl exec`): one JSON line out. */
const HTTP_GET = (host: string, url: string) => `
const http = require('node:http');
const req = http.get(${JSON.stringify(url)}, { headers: { host: ${JSON.stringify(host)} }, timeout: 5000 }, (res) => {
  let body = ''; res.on('data', (d) => (body += d)); res.on('end', () => console.log(JSON.stringify({ status: res.statusCode, body })));
});
req.on('error', (e) => console.log(JSON.stringify({ error: e.code || e.message })));`;

const TLS_CONNECT = (ca: string, host: string, port: number) => `
const tls = require('node:tls');
const s = tls.connect({ host: ${JSON.stringify(host)}, port: ${port}, servername: ${JSON.stringify(host)}, ca: ${JSON.stringify(ca)}, timeout: 5000 }, () => {
  s.write('ping\\n');
});
let data = ''; s.on('data', (d) => { data += d; if (data.includes('\\n')) { console.log(JSON.stringify({ ok: true, authorized: s.authorized, data: data.trim() })); s.destroy(); } });
s.on('error', (e) => console.log(JSON.stringify({ error: e.code || e.message })));
s.on('timeout', () => { console.log(JSON.stringify({ error: 'timeout' })); s.destroy(); });`;

const GREETING = (ip: string, port: number) => `
const net = require('node:net');
const t0 = performance.now();
const s = net.connect({ host: ${JSON.stringify(ip)}, port: ${port} });
s.setTimeout(20000);
s.once('data', (d) => { console.log(JSON.stringify({ greeting: String(d).trim(), ms: performance.now() - t0 })); s.destroy(); });
s.on('close', () => console.log(JSON.stringify({ error: 'closed', ms: performance.now() - t0 })));
s.on('error', (e) => console.log(JSON.stringify({ error: e.code || e.message })));
s.on('timeout', () => { console.log(JSON.stringify({ error: 'timeout' })); s.destroy(); });`;

/** The outside servers: one process in the outside namespace. */
const SERVERS = (key: string, cert: string) => `
const http = require('node:http'), tls = require('node:tls'), net = require('node:net');
http.createServer((q, r) => r.end('plain says hi to ' + q.headers.host + q.url)).listen(${HTTP_EGRESS});
tls.createServer({ key: ${JSON.stringify(key)}, cert: ${JSON.stringify(cert)} }, (s) => s.on('data', () => s.end('secure pong\\n'))).listen(${TLS_EGRESS});
net.createServer((s) => s.write('220 smtp.outside.test ready\\r\\n')).listen(${SMTP_PORT});
console.log('listening');`;

const spec = (name: string, serviceAccount = name, annotations: Record<string, string> = {}): PodSpec => ({
  name,
  serviceAccount,
  labels: { app: name },
  annotations,
  serve: ['--http', String(HTTP_PORT)],
});

/** Connections Envoy's outbound listener (15001) accepted: what iptables sent it. */
async function outboundConnections(pod: RunningPod): Promise<number> {
  const key = 'listener.0.0.0.0_15001.downstream_cx_total';
  return (await pod.envoyStats(key.replace(/\./g, '\\.'))).get(key) ?? 0;
}

function first(text: string): Record<string, unknown> {
  const line = text.split('\n').find((l) => l.startsWith('{')) ?? '{}';
  return JSON.parse(line) as Record<string, unknown>;
}

describe('egress through real Envoy sidecars', { skip, timeout: 420_000 }, () => {
  let mesh: SidecarMesh;
  let buyer: RunningPod;
  let thief: RunningPod;
  let outsideIp = '';
  let ca = '';
  let dir = '';
  let servers: ReturnType<typeof spawn> | undefined;
  const node = process.execPath;
  const script = (p: RunningPod, js: string) => p.execText('app', [node, '-e', js]).then(first);
  /** `skein policy check <pod> --to <url>` on the same mesh: its verdict, with the exit code to match. */
  const policy = async (from: string, url: string) => {
    const r = await mesh.policyCheck([`${mesh.namespace}/${from}`, '--to', url]);
    assert.equal(r.code, r.verdict === 'ALLOWED' ? 0 : 1, r.out);
    return r.verdict;
  };

  before(async () => {
    mesh = await SidecarMesh.start(`eg${sfx}`);
    await mesh.setMeshConfig({ traffic: { permissive: false } });
    // The outside: a namespace on the pod bridge that no Service or sidecar covers.
    const outside = await mesh.network.addPod('outside');
    outsideIp = outside.ip;
    dir = await mkdtemp(path.join(tmpdir(), 'skein-egress-'));
    const o = (...args: string[]) => run('openssl', args);
    await o(
      ...[
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:P-256',
        '-nodes',
        '-days',
        '1',
      ].concat(['-subj', '/CN=outside test CA', '-keyout', `${dir}/ca.key`, '-out', `${dir}/ca.pem`]),
    );
    await o(
      'req',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-subj',
      `/CN=${SECURE}`,
      '-keyout',
      `${dir}/srv.key`,
      '-out',
      `${dir}/srv.csr`,
    );
    await run('sh', [
      '-c',
      `printf 'subjectAltName=DNS:${SECURE}' > ${dir}/ext && openssl x509 -req -in ${dir}/srv.csr -CA ${dir}/ca.pem -CAkey ${dir}/ca.key -CAcreateserial -days 1 -extfile ${dir}/ext -out ${dir}/srv.pem`,
    ]);
    ca = await readFile(`${dir}/ca.pem`, 'utf8');
    const js = SERVERS(await readFile(`${dir}/srv.key`, 'utf8'), await readFile(`${dir}/srv.pem`, 'utf8'));
    servers = spawn('ip', ['netns', 'exec', outside.netns, node, '-e', js], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    await new Promise<void>((resolve, reject) => {
      servers?.stdout?.on('data', (d: Buffer) => String(d).includes('listening') && resolve());
      servers?.on('exit', (c) => reject(new Error(`outside servers exited ${c}`)));
    });
    for (const name of [PLAIN, SECURE, 'other.outside.test']) mesh.outsideHosts.set(name, outsideIp);

    for (const sa of ['buyer', 'thief']) await mesh.createServiceAccount(sa);
    const src = [{ kind: 'ServiceAccount', name: 'buyer', namespace: mesh.namespace }];
    const egress = (name: string, spec: Record<string, unknown>) =>
      mesh.apply('policy.skein.dev', 'v1alpha1', 'egresses', {
        apiVersion: 'policy.skein.dev/v1alpha1',
        kind: 'Egress',
        metadata: { name, namespace: mesh.namespace },
        spec: { sources: src, ...spec },
      });
    await egress('plain', { hosts: [PLAIN], ports: [{ number: HTTP_EGRESS, protocol: 'http' }] });
    await egress('secure', { hosts: [SECURE], ports: [{ number: TLS_EGRESS, protocol: 'https' }] });
    await egress('smtp', {
      ipAddresses: [`${outsideIp}/32`],
      ports: [{ number: SMTP_PORT, protocol: 'tcp-server-first' }],
    });
    buyer = await mesh.startPod(spec('buyer'));
    thief = await mesh.startPod(spec('thief'));
    await mesh.runner.refreshHosts();
    await Promise.all([mesh.waitReady(buyer), mesh.waitReady(thief)]);
    // The controller watches Pods and Egresses separately: buyer can be Ready on a push made
    // before the Egresses arrived (seen on a loaded machine). Wait for their chains.
    await until('buyer has its three egress chains', async () => {
      const dump = await buyer.envoyAdmin('/config_dump?resource=dynamic_listeners');
      return ['egress_80', 'egress_https_443', 'egress_tcp_2525'].every((c) => dump.includes(c));
    });
  });

  after(async () => {
    servers?.kill();
    await mesh?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test('http: the allowed host answers through Envoy; another host and another identity get 403 egress_denied', async () => {
    const ok = await script(buyer, HTTP_GET(PLAIN, `http://${PLAIN}/hello`));
    assert.equal(ok['status'], 200, JSON.stringify(ok));
    assert.match(String(ok['body']), /plain says hi to plain\.outside\.test\/hello/);
    const other = await script(buyer, HTTP_GET('other.outside.test', 'http://other.outside.test/'));
    assert.equal(other['status'], 403, JSON.stringify(other));
    assert.match(String(other['body']), /egress to other\.outside\.test on port 80 is not allowed/);
    const stats = await buyer.envoyStats('egress');
    assert.ok((stats.get('http.egress_80.rbac.egress.denied') ?? 0) >= 1, JSON.stringify([...stats]));
    // Envoy dialled the host it resolved itself (STRICT_DNS); stat names turn ':' into '_'.
    const cluster = await buyer.envoyStats('cluster.plain.outside.test_80.upstream_rq_200');
    assert.ok(
      (cluster.get('cluster.plain.outside.test_80.upstream_rq_200') ?? 0) >= 1,
      JSON.stringify([...cluster]),
    );
    const denied = await script(thief, HTTP_GET(PLAIN, `http://${PLAIN}/hello`));
    assert.equal(denied['status'], 403, JSON.stringify(denied));
    const tstats = await thief.envoyStats('outbound_denied');
    assert.ok((tstats.get('http.outbound_denied.downstream_rq_4xx') ?? 0) >= 1, JSON.stringify([...tstats]));
    // skein policy check agrees with what Envoy did, case by case.
    assert.equal(await policy('buyer', `http://${PLAIN}/hello`), 'ALLOWED');
    assert.equal(await policy('buyer', 'http://other.outside.test/'), 'DENIED');
    assert.equal(await policy('thief', `http://${PLAIN}/hello`), 'DENIED');
  });

  test('https: SNI allowed → the server CA-verified end to end; thief closed (outbound_denied)', async () => {
    const ok = await script(buyer, TLS_CONNECT(ca, SECURE, TLS_EGRESS));
    assert.equal(ok['ok'], true, JSON.stringify(ok));
    assert.equal(ok['authorized'], true);
    assert.equal(ok['data'], 'secure pong');
    const denied = await script(thief, TLS_CONNECT(ca, SECURE, TLS_EGRESS));
    assert.ok(denied['error'], JSON.stringify(denied));
    const stats = await buyer.envoyStats('tcp.egress_https_443');
    assert.ok((stats.get('tcp.egress_https_443.downstream_cx_total') ?? 0) >= 1, JSON.stringify([...stats]));
    assert.equal(await policy('buyer', `https://${SECURE}`), 'ALLOWED');
    assert.equal(await policy('thief', `https://${SECURE}`), 'DENIED');
  });

  test('tcp-server-first: the greeting arrives at once (no listener-filter wait); thief closed', async () => {
    const times: number[] = [];
    for (let i = 0; i < 3; i++) {
      const ok = await script(buyer, GREETING(outsideIp, SMTP_PORT));
      assert.match(String(ok['greeting']), /^220 /, JSON.stringify(ok));
      times.push(Number(ok['ms']));
    }
    console.log(
      `server-first greeting latency through Envoy (ms): ${times.map((t) => t.toFixed(1)).join(', ')}`,
    );
    // Envoy's listener-filter timeout is 15 s (skein sets 1 s where inspectors run): far below both.
    assert.ok(Math.max(...times) < 500, times.join());
    const denied = await script(thief, GREETING(outsideIp, SMTP_PORT));
    assert.equal(denied['greeting'], undefined, JSON.stringify(denied));
    const stats = await buyer.envoyStats('tcp.egress_tcp_2525');
    assert.ok((stats.get('tcp.egress_tcp_2525.downstream_cx_total') ?? 0) >= 3, JSON.stringify([...stats]));
    assert.equal(await policy('buyer', `tcp://${outsideIp}:${SMTP_PORT}`), 'ALLOWED');
    assert.equal(await policy('thief', `tcp://${outsideIp}:${SMTP_PORT}`), 'DENIED');
  });

  test('a MeshConfig outbound IP range exclusion: pods admitted afterwards reach the outside server directly, bypassing Envoy', async () => {
    const range = `${outsideIp}/32`;
    const excluded = `-A SKEIN_PROXY_OUTBOUND -d ${range} -j RETURN`;
    await mesh.setMeshConfig({ traffic: { permissive: false, outboundIPRangeExclusionList: [range] } });
    await until('the injector applies the exclusion', async () =>
      (await mesh.admittedRules(spec('dry', 'thief'))).includes(excluded),
    );
    // A bad entry refuses the new MeshConfig, naming it and the value; the last valid one stays.
    await mesh.setMeshConfig({
      traffic: { permissive: false, outboundIPRangeExclusionList: ['10.0.0.0/33'] },
    });
    await until('the bad MeshConfig is reported', async () => {
      const problems = (await mesh.debug('problems')) as { kind?: string; name?: string; reason: string }[];
      return problems.some(
        (p) =>
          p.kind === 'MeshConfig' &&
          p.name === 'skein' &&
          p.reason.includes(
            'spec.traffic.outboundIPRangeExclusionList[0]: "10.0.0.0/33" has a prefix length',
          ),
      );
    });
    assert.ok(
      (await mesh.admittedRules(spec('dry', 'thief'))).includes(excluded),
      'the last valid list stays',
    );

    // thief has no Egress: through Envoy it is refused, directly it is not.
    const direct = await mesh.startPod(spec('direct', 'thief'));
    await mesh.waitReady(direct);
    const before = await outboundConnections(direct);
    const ok = await script(direct, HTTP_GET(PLAIN, `http://${outsideIp}:${HTTP_EGRESS}/hello`));
    assert.equal(ok['status'], 200, JSON.stringify(ok));
    assert.match(String(ok['body']), /plain says hi to plain\.outside\.test\/hello/);
    assert.equal(await outboundConnections(direct), before, "Envoy's outbound listener never saw it");
    // thief was admitted before the change: its rules, and Envoy's refusal, are unchanged.
    const old = await outboundConnections(thief);
    const refused = await script(thief, HTTP_GET(PLAIN, `http://${outsideIp}:${HTTP_EGRESS}/hello`));
    assert.equal(refused['status'], 403, JSON.stringify(refused));
    assert.equal(await outboundConnections(thief), old + 1);
    // /debug/interception names the pods whose rules predate the change, and not the new one.
    const report = (await mesh.debug('interception')) as {
      mesh: { outboundIpRanges: string[] };
      stalePods: {
        name: string;
        admitted: { outboundIpRanges: string[] };
        now?: { outboundIpRanges: string[] };
      }[];
    };
    assert.deepEqual(report.mesh.outboundIpRanges, [range]);
    assert.deepEqual(
      report.stalePods.map((p) => [p.name, p.admitted.outboundIpRanges, p.now?.outboundIpRanges]),
      [
        ['buyer', [], [range]],
        ['thief', [], [range]],
      ],
    );
    await mesh.deletePod('direct');
  });

  test("a MeshConfig inclusion list: only its ranges reach Envoy; a pod's own inclusion list replaces it", async () => {
    await mesh.setMeshConfig({
      traffic: { permissive: false, outboundIPRangeInclusionList: [SERVICE_CIDR] },
    });
    const included = `-A SKEIN_PROXY_OUTBOUND -p tcp -d ${SERVICE_CIDR} -j SKEIN_PROXY_REDIRECT`;
    await until('the injector applies the inclusion list', async () =>
      (await mesh.admittedRules(spec('dry', 'thief'))).includes(included),
    );
    const own = { 'skein.dev/outbound-ip-range-inclusion-list': `${outsideIp}/32` };
    const [narrow, wide] = await Promise.all([
      mesh.startPod(spec('narrow', 'thief')),
      mesh.startPod(spec('wide', 'thief', own)),
    ]);
    await Promise.all([mesh.waitReady(narrow), mesh.waitReady(wide)]);
    const url = `http://${outsideIp}:${HTTP_EGRESS}/hello`;

    // The outside server is not in the Service CIDR: it leaves unintercepted.
    const n0 = await outboundConnections(narrow);
    const ok = await script(narrow, HTTP_GET(PLAIN, url));
    assert.equal(ok['status'], 200, JSON.stringify(ok));
    assert.equal(await outboundConnections(narrow), n0, 'not through Envoy');
    // The pod's list names only the outside server: Envoy gets it, and refuses thief.
    const w0 = await outboundConnections(wide);
    const refused = await script(wide, HTTP_GET(PLAIN, url));
    assert.equal(refused['status'], 403, JSON.stringify(refused));
    assert.equal(await outboundConnections(wide), w0 + 1);
    await Promise.all([mesh.deletePod('narrow'), mesh.deletePod('wide')]);
  });
});
