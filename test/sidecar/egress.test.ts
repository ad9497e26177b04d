// Egress through real Envoy sidecars: servers in a network namespace outside
// the mesh (on the pod bridge, no mesh Service, no sidecar) — a plain HTTP
// server, a TLS server with its own CA (the client verifies the name it sent
// as SNI), a server-first TCP server that greets first. SMI mode, two
// identities: `buyer` is the source of three Egress objects, `thief` of none.
// Every call is made by the app (uid 1000, redirected to Envoy by iptables);
// reasons are read from Envoy's own stats, and `skein policy check --to` must
// give the verdict Envoy gave for each case. Then: client-first TCP by address
// range and port, a wrong SNI from an allowed identity, HTTPRouteGroup
// matches on an http Egress, and MeshConfig enableEgress on and off again.
// The last tests give later pods
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
import { sleep } from '../support/processes.js';
import { HTTP_PORT, type PodSpec, SERVICE_CIDR, SidecarMesh, sidecarSuiteSkipReason } from './mesh.js';
import { assertAllowedOnTheOpenConnection, firstJsonLine, KEEPALIVE_UNTIL_ALLOWED } from './scripts.js';

const sfx = randomBytes(3).toString('hex');
const skip = await sidecarSuiteSkipReason();

const PLAIN = 'plain.outside.test';
const SECURE = 'secure.outside.test';
const HTTP_EGRESS = 80;
const TLS_EGRESS = 443;
const SMTP_PORT = 2525;
/** Client-first TCP: allowed to the outside server's address. */
const ECHO_PORT = 7000;
/** Client-first TCP: an Egress allows it to another range only. */
const ECHO_ELSEWHERE_PORT = 7001;

/** Node scripts the app container runs (`kubectl exec`): one JSON line out. */
const HTTP_GET = (host: string, url: string) => `
const http = require('node:http');
const req = http.get(${JSON.stringify(url)}, { headers: { host: ${JSON.stringify(host)} }, timeout: 5000 }, (res) => {
  let body = ''; res.on('data', (d) => (body += d)); res.on('end', () => console.log(JSON.stringify({ status: res.statusCode, body })));
});
req.on('error', (e) => console.log(JSON.stringify({ error: e.code || e.message })));`;

/** `sni` other than `host`: the CA still verifies the chain, the name check is off (only Envoy may refuse it). */
const TLS_CONNECT = (ca: string, host: string, port: number, sni = host) => `
const tls = require('node:tls');
const s = tls.connect({ host: ${JSON.stringify(host)}, port: ${port}, servername: ${JSON.stringify(sni)}, ca: ${JSON.stringify(ca)}, timeout: 5000${sni === host ? '' : ', checkServerIdentity: () => undefined'} }, () => {
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

/** A client-first TCP exchange: the client speaks, the server echoes. */
const ECHO = (ip: string, port: number) => `
const net = require('node:net');
const s = net.connect({ host: ${JSON.stringify(ip)}, port: ${port} }, () => s.write('ping\\n'));
s.setTimeout(5000);
let data = '';
s.on('data', (d) => { data += d; if (data.includes('\\n')) { console.log(JSON.stringify({ data: data.trim() })); s.destroy(); } });
s.on('close', () => console.log(JSON.stringify({ error: 'closed', data })));
s.on('error', (e) => console.log(JSON.stringify({ error: e.code || e.message })));
s.on('timeout', () => { console.log(JSON.stringify({ error: 'timeout' })); s.destroy(); });`;

/** The outside servers: one process in the outside namespace. */
const SERVERS = (key: string, cert: string) => `
const http = require('node:http'), tls = require('node:tls'), net = require('node:net');
http.createServer((q, r) => r.end('plain says hi to ' + q.headers.host + q.url)).listen(${HTTP_EGRESS});
tls.createServer({ key: ${JSON.stringify(key)}, cert: ${JSON.stringify(cert)} }, (s) => s.on('data', () => s.end('secure pong\\n'))).listen(${TLS_EGRESS});
net.createServer((s) => s.write('220 smtp.outside.test ready\\r\\n')).listen(${SMTP_PORT});
for (const port of [${ECHO_PORT}, ${ECHO_ELSEWHERE_PORT}])
  net.createServer((s) => s.on('data', (d) => s.end('echo ' + port + ' ' + d))).listen(port);
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

describe('egress through real Envoy sidecars', { skip, timeout: 420_000 }, () => {
  let mesh: SidecarMesh;
  let buyer: RunningPod;
  let thief: RunningPod;
  let outsideIp = '';
  let ca = '';
  let dir = '';
  let servers: ReturnType<typeof spawn> | undefined;
  const node = process.execPath;
  const script = (p: RunningPod, js: string) => p.execText('app', [node, '-e', js]).then(firstJsonLine);
  /** `skein policy check <pod> --to <url>` on the same mesh: its verdict, with the exit code to match. */
  const policy = async (from: string, url: string) => {
    const r = await mesh.policyCheck([`${mesh.namespace}/${from}`, '--to', url]);
    assert.equal(r.code, r.verdict === 'ALLOWED' ? 0 : 1, r.out);
    return r.verdict;
  };

  /** Creates or replaces an Egress whose source is buyer. */
  const egress = (name: string, spec: Record<string, unknown>) =>
    mesh.apply('policy.skein.dev', 'v1alpha1', 'egresses', {
      apiVersion: 'policy.skein.dev/v1alpha1',
      kind: 'Egress',
      metadata: { name, namespace: mesh.namespace },
      spec: { sources: [{ kind: 'ServiceAccount', name: 'buyer', namespace: mesh.namespace }], ...spec },
    });

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
    await egress('plain', { hosts: [PLAIN], ports: [{ number: HTTP_EGRESS, protocol: 'http' }] });
    await egress('secure', { hosts: [SECURE], ports: [{ number: TLS_EGRESS, protocol: 'https' }] });
    await egress('smtp', {
      ipAddresses: [`${outsideIp}/32`],
      ports: [{ number: SMTP_PORT, protocol: 'tcp-server-first' }],
    });
    await egress('echo', {
      ipAddresses: [`${outsideIp}/32`],
      ports: [{ number: ECHO_PORT, protocol: 'tcp' }],
    });
    // TEST-NET-1 (RFC 5737): never the outside server's address.
    await egress('echo-elsewhere', {
      ipAddresses: ['192.0.2.0/24'],
      ports: [{ number: ECHO_ELSEWHERE_PORT, protocol: 'tcp' }],
    });
    buyer = await mesh.startPod(spec('buyer'));
    thief = await mesh.startPod(spec('thief'));
    await mesh.runner.refreshHosts();
    await Promise.all([mesh.waitReady(buyer), mesh.waitReady(thief)]);
    // The controller watches Pods and Egresses separately: buyer can be Ready on a push made
    // before the Egresses arrived (seen on a loaded machine). Wait for their chains.
    await until('buyer has its egress chains', async () => {
      const dump = await buyer.envoyAdmin('/config_dump?resource=dynamic_listeners');
      return ['egress_80', 'egress_https_443', 'egress_tcp_2525', 'egress_tcp_7000', 'egress_tcp_7001'].every(
        (c) => dump.includes(c),
      );
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

  test('http: an Egress added reaches a connection the app keeps open: a host denied on it is then answered over it', async () => {
    // The allowed hosts are on the egress route config (RDS), which Envoy applies to open
    // connections; in the chain's RBAC filter, a changed chain kept the app's kept-alive
    // connection on the old host list until Envoy drained it.
    const OTHER = 'other.outside.test';
    const result = script(buyer, KEEPALIVE_UNTIL_ALLOWED(OTHER, `http://${PLAIN}/`));
    // The script's first calls are denied on its connection before the Egress exists.
    await sleep(2000);
    await egress('other', { hosts: [OTHER], ports: [{ number: HTTP_EGRESS, protocol: 'http' }] });
    try {
      assertAllowedOnTheOpenConnection(await result);
    } finally {
      await mesh.api.request(
        'DELETE',
        `/apis/policy.skein.dev/v1alpha1/namespaces/${mesh.namespace}/egresses/other`,
      );
    }
    // Removed again: the host is denied again (the later tests count on it).
    await until('other.outside.test denied again', async () => {
      const r = await script(buyer, HTTP_GET(OTHER, `http://${OTHER}/`));
      return r['status'] === 403;
    });
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

  test('tcp (client-first) by IP range and port: the allowed range answers; a port whose Egress names another range, and thief, are closed', async () => {
    const stat = async (p: RunningPod, prefix: string) => {
      const key = `tcp.${prefix}.downstream_cx_total`;
      return (await p.envoyStats(key.replace(/\./g, '\\.'))).get(key) ?? 0;
    };
    const allowed0 = await stat(buyer, 'egress_tcp_7000');
    const denied0 = await stat(buyer, 'egress_denied');
    const ok = await script(buyer, ECHO(outsideIp, ECHO_PORT));
    assert.equal(ok['data'], `echo ${ECHO_PORT} ping`, JSON.stringify(ok));
    assert.equal(await stat(buyer, 'egress_tcp_7000'), allowed0 + 1);
    // The outside server is not in 192.0.2.0/24: the range is enforced (OSM parsed it and never applied it).
    const elsewhere = await script(buyer, ECHO(outsideIp, ECHO_ELSEWHERE_PORT));
    assert.equal(elsewhere['data'] ?? '', '', JSON.stringify(elsewhere));
    assert.ok(elsewhere['error'], JSON.stringify(elsewhere));
    assert.equal(await stat(buyer, 'egress_denied'), denied0 + 1);
    const thief0 = await stat(thief, 'outbound_denied');
    const stolen = await script(thief, ECHO(outsideIp, ECHO_PORT));
    assert.ok(stolen['error'] && !stolen['data'], JSON.stringify(stolen));
    assert.equal(await stat(thief, 'outbound_denied'), thief0 + 1);
    console.log(
      `tcp egress: buyer egress_tcp_7000 cx ${allowed0}→${allowed0 + 1}, egress_denied ${denied0}→${denied0 + 1}; thief outbound_denied ${thief0}→${thief0 + 1}`,
    );
    assert.equal(await policy('buyer', `tcp://${outsideIp}:${ECHO_PORT}`), 'ALLOWED');
    assert.equal(await policy('buyer', `tcp://${outsideIp}:${ECHO_ELSEWHERE_PORT}`), 'DENIED');
    assert.equal(await policy('thief', `tcp://${outsideIp}:${ECHO_PORT}`), 'DENIED');
  });

  test('https: an allowed identity sending an SNI its Egress does not name is closed (egress_denied) before the handshake', async () => {
    const key = 'tcp.egress_denied.downstream_cx_total';
    const passed = 'tcp.egress_https_443.downstream_cx_total';
    const read = async () => {
      const s = await buyer.envoyStats('tcp\\.egress_(denied|https_443)\\.downstream_cx_total');
      return { denied: s.get(key) ?? 0, passed: s.get(passed) ?? 0 };
    };
    const before = await read();
    // The same server and port, the chain CA-verified if it got through: only the SNI differs.
    const wrong = await script(buyer, TLS_CONNECT(ca, SECURE, TLS_EGRESS, 'wrong.outside.test'));
    assert.ok(wrong['error'] && wrong['ok'] === undefined, JSON.stringify(wrong));
    const mid = await read();
    assert.deepEqual(mid, { denied: before.denied + 1, passed: before.passed });
    const right = await script(buyer, TLS_CONNECT(ca, SECURE, TLS_EGRESS));
    assert.equal(right['data'], 'secure pong', JSON.stringify(right));
    assert.deepEqual(await read(), { denied: mid.denied, passed: mid.passed + 1 });
    console.log(
      `wrong SNI: ${JSON.stringify(wrong)}; stats before ${JSON.stringify(before)} after ${JSON.stringify(mid)}`,
    );
  });

  test('http with HTTPRouteGroup matches: the matched path leaves, another path on the allowed host gets 403 at the sidecar', async () => {
    await mesh.apply('specs.smi-spec.io', 'v1alpha4', 'httproutegroups', {
      apiVersion: 'specs.smi-spec.io/v1alpha4',
      kind: 'HTTPRouteGroup',
      metadata: { name: 'plain-hello', namespace: mesh.namespace },
      spec: { matches: [{ name: 'hello', pathRegex: '/hello(/.*)?', methods: ['GET'] }] },
    });
    await egress('plain', {
      hosts: [PLAIN],
      ports: [{ number: HTTP_EGRESS, protocol: 'http' }],
      matches: [{ apiGroup: 'specs.smi-spec.io/v1alpha4', kind: 'HTTPRouteGroup', name: 'plain-hello' }],
    });
    const upstream = async () => {
      const k = 'cluster.plain.outside.test_80.upstream_rq_total';
      return (await buyer.envoyStats(k.replace(/\./g, '\\.'))).get(k) ?? 0;
    };
    await until('the matches are in force', async () => {
      const r = await script(buyer, HTTP_GET(PLAIN, `http://${PLAIN}/admin`));
      return r['status'] === 403;
    });
    const u0 = await upstream();
    const ok = await script(buyer, HTTP_GET(PLAIN, `http://${PLAIN}/hello/world`));
    assert.equal(ok['status'], 200, JSON.stringify(ok));
    assert.match(String(ok['body']), /plain says hi to plain\.outside\.test\/hello\/world/);
    assert.equal(await upstream(), u0 + 1);
    const other = await script(buyer, HTTP_GET(PLAIN, `http://${PLAIN}/admin`));
    assert.equal(other['status'], 403, JSON.stringify(other));
    assert.match(String(other['body']), /egress to plain\.outside\.test on port 80 is not allowed/);
    assert.equal(await upstream(), u0 + 1, 'the refused request never left the sidecar');
    // The host is allowed (RBAC), the route refused the path.
    const s = await buyer.envoyStats('http\\.egress_80\\.');
    assert.ok((s.get('http.egress_80.rbac.egress.allowed') ?? 0) >= 2, JSON.stringify([...s]));
    assert.ok((s.get('http.egress_80.downstream_rq_4xx') ?? 0) >= 1, JSON.stringify([...s]));
    console.log(
      `egress matches: upstream_rq_total ${u0}→${u0 + 1}; egress_80 rbac.allowed=${s.get('http.egress_80.rbac.egress.allowed')} downstream_rq_4xx=${s.get('http.egress_80.downstream_rq_4xx')}`,
    );
    assert.equal(await policy('buyer', `http://${PLAIN}/hello/world`), 'ALLOWED');
    assert.equal(await policy('buyer', `http://${PLAIN}/admin`), 'DENIED');
  });

  test('MeshConfig enableEgress in SMI mode: destinations no Egress names pass through; off again, refused', async () => {
    const passthrough = async (p: RunningPod) => {
      const k = 'cluster.passthrough-outbound.upstream_cx_total';
      return (await p.envoyStats(k.replace(/\./g, '\\.'))).get(k) ?? 0;
    };
    await mesh.setMeshConfig({ traffic: { permissive: false, enableEgress: true } });
    // Each sidecar gets the change in its own push: wait for both.
    await until('thief and buyer pass through', async () => {
      const t = await script(thief, HTTP_GET(PLAIN, `http://${PLAIN}/hello`));
      const b = await script(buyer, HTTP_GET('other.outside.test', 'http://other.outside.test/'));
      return t['status'] === 200 && b['status'] === 200;
    });
    const t0 = await passthrough(thief);
    const ok = await script(thief, HTTP_GET(PLAIN, `http://${PLAIN}/free`));
    assert.equal(ok['status'], 200, JSON.stringify(ok));
    assert.equal(await passthrough(thief), t0 + 1);
    // buyer: a host no Egress names, and a port no Egress names, both through the passthrough.
    const b0 = await passthrough(buyer);
    const other = await script(buyer, HTTP_GET('other.outside.test', 'http://other.outside.test/x'));
    assert.equal(other['status'], 200, JSON.stringify(other));
    assert.match(String(other['body']), /plain says hi to other\.outside\.test\/x/);
    const elsewhere = await script(buyer, ECHO(outsideIp, ECHO_ELSEWHERE_PORT));
    assert.equal(elsewhere['data'], `echo ${ECHO_ELSEWHERE_PORT} ping`, JSON.stringify(elsewhere));
    assert.equal(await passthrough(buyer), b0 + 2);
    assert.equal(await policy('thief', `http://${PLAIN}/free`), 'ALLOWED');
    const pol = (await mesh.debug('policies')) as { egress: { passthrough?: string } };
    assert.match(pol.egress.passthrough ?? '', /enableEgress/);
    console.log(`enableEgress: thief passthrough cx ${t0}→${t0 + 1}, buyer ${b0}→${b0 + 2}`);

    await mesh.setMeshConfig({ traffic: { permissive: false } });
    await until('thief and buyer refused again', async () => {
      const t = await script(thief, HTTP_GET(PLAIN, `http://${PLAIN}/hello`));
      const b = await script(buyer, HTTP_GET('other.outside.test', 'http://other.outside.test/'));
      return t['status'] === 403 && b['status'] === 403;
    });
    const t1 = await passthrough(thief);
    assert.equal(
      (await script(buyer, HTTP_GET('other.outside.test', 'http://other.outside.test/x')))['status'],
      403,
    );
    assert.ok((await script(thief, ECHO(outsideIp, ECHO_PORT)))['error']);
    assert.equal(await passthrough(thief), t1, 'nothing through the passthrough once it is off');
    assert.equal(await policy('thief', `http://${PLAIN}/free`), 'DENIED');
    assert.equal(
      ((await mesh.debug('policies')) as { egress: { passthrough?: string } }).egress.passthrough,
      undefined,
    );
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
