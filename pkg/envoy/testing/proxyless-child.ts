// Test helper process: one real grpc-js-xds workload (one identity per process
// via GRPC_XDS_BOOTSTRAP; grpc-js-xds caches xDS state per process, so every
// scenario gets a fresh one — reference.md section 4).
//
//   node proxyless-child.js server   (SKEIN_TEST_NAME, SKEIN_TEST_LISTEN=ip:port)
//   node proxyless-child.js client   (SKEIN_TEST_TARGET, SKEIN_TEST_CALLS=json, SKEIN_TEST_PLAINTEXT=1?)
//
// Prints JSON lines on stdout: {"type":"listening"} or {"type":"results",...}.

// Type-only: erased at runtime, so grpc-js still loads after the env below.
import type { MethodDefinition, sendUnaryData, UntypedServiceImplementation } from '@grpc/grpc-js';

// Must be set before grpc-js-xds loads (reference.md section 4).
process.env['GRPC_XDS_EXPERIMENTAL_RBAC'] = 'true';
const grpc = await import('@grpc/grpc-js');
const xds = await import('@grpc/grpc-js-xds');
xds.register();

/** The bookstore gRPC service, with Buffers as messages (no .proto needed). */
const BOOKSTORE_METHODS = ['BuyBook', 'StealBook', 'Restock'] as const;
const passthrough = {
  requestSerialize: (b: Buffer) => b,
  requestDeserialize: (b: Buffer) => b,
  responseSerialize: (b: Buffer) => b,
  responseDeserialize: (b: Buffer) => b,
};
const definition: Record<string, MethodDefinition<Buffer, Buffer>> = {};
for (const m of BOOKSTORE_METHODS) {
  definition[m] = {
    path: `/bookstore.Bookstore/${m}`,
    requestStream: false,
    responseStream: false,
    ...passthrough,
  };
}

function emit(line: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

function env(name: string): string {
  const v = process.env[name];
  if (v === undefined || v === '') throw new Error(`${name} is required`);
  return v;
}

async function runServer(): Promise<void> {
  const name = env('SKEIN_TEST_NAME');
  const server = new xds.XdsServer();
  const implementation: UntypedServiceImplementation = {};
  for (const m of BOOKSTORE_METHODS) {
    implementation[m] = (_call: unknown, callback: sendUnaryData<Buffer>) =>
      callback(null, Buffer.from(name));
  }
  server.addService(definition, implementation);
  const creds = new xds.XdsServerCredentials(grpc.ServerCredentials.createInsecure());
  // bindAsync calls back only once the Listener (and its routes) arrived.
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(env('SKEIN_TEST_LISTEN'), creds, (err) => (err ? reject(err) : resolve())),
  );
  emit({ type: 'listening', name });
  process.on('SIGTERM', () => {
    server.forceShutdown();
    process.exit(0);
  });
}

interface CallSpec {
  method: string;
  count: number;
  metadata?: Record<string, string>;
}
export interface CallResult {
  method: string;
  /** Successes per answering backend. */
  ok: Record<string, number>;
  /** Failures per status code name. */
  errors: Record<string, number>;
  details: string[];
}

function isCallSpec(v: unknown): v is CallSpec {
  return (
    typeof v === 'object' &&
    v !== null &&
    'method' in v &&
    typeof v.method === 'string' &&
    'count' in v &&
    typeof v.count === 'number'
  );
}

async function runClient(): Promise<void> {
  const parsed: unknown = JSON.parse(env('SKEIN_TEST_CALLS'));
  const calls = Array.isArray(parsed) ? parsed.filter(isCallSpec) : [];
  const plaintext = process.env['SKEIN_TEST_PLAINTEXT'] === '1';
  const creds = plaintext
    ? grpc.credentials.createInsecure()
    : new xds.XdsChannelCredentials(grpc.credentials.createInsecure());
  const client = new grpc.Client(env('SKEIN_TEST_TARGET'), creds);
  const results: CallResult[] = [];
  for (const spec of calls) {
    const r: CallResult = { method: spec.method, ok: {}, errors: {}, details: [] };
    for (let i = 0; i < spec.count; i++) {
      const md = new grpc.Metadata();
      for (const [k, v] of Object.entries(spec.metadata ?? {})) md.set(k, v);
      await new Promise<void>((resolve) => {
        client.makeUnaryRequest(
          `/bookstore.Bookstore/${spec.method}`,
          passthrough.requestSerialize,
          passthrough.responseDeserialize,
          Buffer.alloc(0),
          md,
          { deadline: Date.now() + 4000 },
          (err, res) => {
            if (err) {
              const code = grpc.status[err.code] ?? String(err.code);
              r.errors[code] = (r.errors[code] ?? 0) + 1;
              if (!r.details.includes(err.details)) r.details.push(err.details);
            } else {
              const backend = res?.toString() ?? '';
              r.ok[backend] = (r.ok[backend] ?? 0) + 1;
            }
            resolve();
          },
        );
      });
    }
    results.push(r);
  }
  emit({ type: 'results', results });
  client.close();
  process.exit(0);
}

const mode = process.argv[2];
if (mode === 'server') await runServer();
else if (mode === 'client') await runClient();
else {
  process.stderr.write('usage: proxyless-child server|client\n');
  process.exit(2);
}
