// A proxyless gRPC workload for the demo and the end-to-end tests: either a server
// that answers with its own name, or a caller that dials an `xds:///` target and
// reports per-backend successes and per-code failures as JSON lines on stdout.
//
//   workload server --name bookstore-v1 --listen 127.0.0.21:14001 [--method /pkg.Svc/M ...]
//                   [--fail-ratio R] [--delay-ms D]
//   workload caller --target xds:///bookstore.bookstore.svc.cluster.local:14001 [--count N]
//                   [--method /pkg.Svc/M] [--header k=v ...] [--plaintext] [--concurrency C]
//                   [--claim-node-id ID]
//
// The server answers Who and every --method path (grpc-js replies UNIMPLEMENTED
// to unregistered paths before RBAC runs, so a path must be registered for a
// test to see the policy's answer). The caller calls Who unless told otherwise;
// --plaintext dials without xDS credentials.
//
// Resilience tests: --fail-ratio makes that share of the server's answers
// UNAVAILABLE, spread evenly (0.5 fails every second call, 1 every call);
// --delay-ms delays every answer (longer than 500 ms needs a longer
// --max-connection-age-ms, or the recycled connection drops the call). The caller's --concurrency keeps that many
// calls in flight until --count are made (`lastAtMs`: when each outcome was last seen), after --warmup calls made one by one
// and not counted (the channel then has its xDS config and connections), the
// n-th of them starting --stagger-ms × n later; its `done` line carries the slowest
// call per outcome (`maxMs`), so a test can tell a fast failure from a slow one.
//
// The xDS bootstrap comes from GRPC_XDS_BOOTSTRAP (one identity per process).
// --claim-node-id <id> sends that node.id instead of the bootstrap's: an impostor,
// for the tests that prove a workload cannot be another pod (in a pod, where the
// bootstrap file is a read-only Secret volume).
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

// Must be set before grpc-js-xds loads (grpc-js-xds reads GRPC_XDS_EXPERIMENTAL_RBAC at load time).
process.env['GRPC_XDS_EXPERIMENTAL_RBAC'] = 'true';
const grpc = await import('@grpc/grpc-js');
const xds = await import('@grpc/grpc-js-xds');
xds.register();

export const WHO_METHOD = '/skein.test.Echo/Who';
const passthrough = {
  requestSerialize: (b: Buffer) => b,
  requestDeserialize: (b: Buffer) => b,
  responseSerialize: (b: Buffer) => b,
  responseDeserialize: (b: Buffer) => b,
};
const serviceDefinition = {
  Who: { path: WHO_METHOD, requestStream: false, responseStream: false, ...passthrough },
};

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    name: { type: 'string' },
    listen: { type: 'string' },
    target: { type: 'string' },
    count: { type: 'string' },
    method: { type: 'string', multiple: true },
    header: { type: 'string', multiple: true },
    plaintext: { type: 'boolean', default: false },
    'interval-ms': { type: 'string', default: '2' },
    'report-ms': { type: 'string', default: '250' },
    'deadline-ms': { type: 'string', default: '10000' },
    'fail-ratio': { type: 'string', default: '0' },
    'delay-ms': { type: 'string', default: '0' },
    'max-connection-age-ms': { type: 'string', default: '2000' },
    concurrency: { type: 'string', default: '1' },
    warmup: { type: 'string', default: '0' },
    'stagger-ms': { type: 'string', default: '0' },
    'claim-node-id': { type: 'string' },
  },
});

// Before any xDS client exists: grpc-js-xds reads and caches the bootstrap when the first one
// is created, taking GRPC_XDS_BOOTSTRAP_CONFIG (inline JSON) when GRPC_XDS_BOOTSTRAP is unset.
const claim = values['claim-node-id'];
if (claim !== undefined) {
  const file = process.env['GRPC_XDS_BOOTSTRAP'];
  if (!file) throw new Error('--claim-node-id needs GRPC_XDS_BOOTSTRAP');
  const bootstrap = JSON.parse(readFileSync(file, 'utf8')) as { node?: { id?: string } };
  bootstrap.node = { ...bootstrap.node, id: claim };
  delete process.env['GRPC_XDS_BOOTSTRAP'];
  process.env['GRPC_XDS_BOOTSTRAP_CONFIG'] = JSON.stringify(bootstrap);
}

function emit(line: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

async function runServer(): Promise<void> {
  const name = values.name ?? 'server';
  const listen = values.listen;
  if (!listen) throw new Error('--listen ip:port is required');
  // Old connections keep the policy they were accepted under (grpc-js-xds 1.14
  // behaviour): recycle them so RBAC changes reach every caller.
  const server = new xds.XdsServer({
    'grpc.max_connection_age_ms': Number(values['max-connection-age-ms']),
    'grpc.max_connection_age_grace_ms': 500,
  });
  const failRatio = Number(values['fail-ratio']);
  const delayMs = Number(values['delay-ms']);
  let served = 0;
  const answer = (
    _call: unknown,
    callback: (err: { code: number; details: string } | null, res?: Buffer) => void,
  ) => {
    // Call n fails when n·ratio crosses an integer: exactly the ratio, evenly spread.
    const n = served++;
    const fail = Math.floor((n + 1) * failRatio) > Math.floor(n * failRatio);
    const reply = () =>
      fail
        ? callback({ code: grpc.status.UNAVAILABLE, details: `${name} fails on purpose` })
        : callback(null, Buffer.from(name));
    if (delayMs > 0) setTimeout(reply, delayMs);
    else reply();
  };
  server.addService(serviceDefinition, { Who: answer });
  for (const path of values.method ?? []) {
    if (path !== WHO_METHOD)
      server.register(path, answer, passthrough.responseSerialize, passthrough.requestDeserialize, 'unary');
  }
  const creds = new xds.XdsServerCredentials(grpc.ServerCredentials.createInsecure());
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(listen, creds, (err) => (err ? reject(err) : resolve())),
  );
  emit({ type: 'listening', name, listen });
  const stop = () => server.tryShutdown(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

async function runCaller(): Promise<void> {
  const target = values.target;
  if (!target) throw new Error('--target xds:///host:port is required');
  const count = values.count ? Number(values.count) : Number.POSITIVE_INFINITY;
  const intervalMs = Number(values['interval-ms']);
  const deadlineMs = Number(values['deadline-ms']);
  const method = values.method?.at(-1) ?? WHO_METHOD;
  const metadata = new grpc.Metadata();
  for (const h of values.header ?? []) {
    const eq = h.indexOf('=');
    if (eq <= 0) throw new Error(`--header ${h}: expected name=value`);
    metadata.set(h.slice(0, eq), h.slice(eq + 1));
  }
  const Client = grpc.makeGenericClientConstructor(serviceDefinition, 'Echo');
  const credentials = values.plaintext
    ? grpc.credentials.createInsecure()
    : new xds.XdsChannelCredentials(grpc.credentials.createInsecure());
  const client = new Client(target, credentials);
  const call = (): Promise<string> =>
    new Promise((resolve, reject) => {
      client.makeUnaryRequest(
        method,
        (b: Buffer) => b,
        (b: Buffer) => b,
        Buffer.alloc(0),
        metadata,
        { deadline: Date.now() + deadlineMs },
        (err, res) => (err || !res ? reject(err) : resolve(res.toString())),
      );
    });

  let ok: Record<string, number> = {};
  let errors: Record<string, number> = {};
  const total = { ok: {} as Record<string, number>, errors: {} as Record<string, number> };
  const maxMs: Record<string, number> = {};
  // When each outcome was last seen, in ms since the first counted call started.
  const lastAtMs: Record<string, number> = {};
  // The first message seen per failure code, to tell causes apart.
  const details: Record<string, string> = {};
  const report = setInterval(() => {
    emit({ type: 'stats', ok, errors });
    ok = {};
    errors = {};
  }, Number(values['report-ms']));
  let stopping = false;
  process.on('SIGTERM', () => {
    stopping = true;
  });
  for (let i = 0; i < Number(values.warmup); i++) await call().catch(() => undefined);
  let started = 0;
  let t0Run = 0;
  const stagger = Number(values['stagger-ms']);
  const worker = async (n: number) => {
    if (stagger > 0) await new Promise((r) => setTimeout(r, stagger * n));
    while (started < count && !stopping) {
      started++;
      const t0 = performance.now();
      if (t0Run === 0) t0Run = t0;
      let key: string;
      try {
        key = await call();
        ok[key] = (ok[key] ?? 0) + 1;
        total.ok[key] = (total.ok[key] ?? 0) + 1;
      } catch (err) {
        key = codeName(err);
        details[key] ??= err instanceof Error ? err.message : String(err);
        errors[key] = (errors[key] ?? 0) + 1;
        total.errors[key] = (total.errors[key] ?? 0) + 1;
      }
      const t1 = performance.now();
      maxMs[key] = Math.max(maxMs[key] ?? 0, Math.round(t1 - t0));
      lastAtMs[key] = Math.round(t1 - t0Run);
      if (intervalMs > 0) await new Promise((r) => setTimeout(r, intervalMs));
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Number(values.concurrency)) }, (_, n) => worker(n)));
  clearInterval(report);
  emit({ type: 'stats', ok, errors });
  emit({ type: 'done', ...total, maxMs, lastAtMs, details });
  client.close();
  process.exit(0);
}

function codeName(err: unknown): string {
  if (err && typeof err === 'object' && 'code' in err && typeof err.code === 'number') {
    return grpc.status[err.code] ?? String(err.code);
  }
  return 'UNKNOWN';
}

const mode = positionals[0];
if (mode === 'server') await runServer();
else if (mode === 'caller') await runCaller();
else {
  process.stderr.write('usage: workload server|caller [flags]\n');
  process.exit(2);
}
