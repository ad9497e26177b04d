// A plain (mesh-unaware) application for the sidecar tests: it knows nothing
// about xDS or certificates and talks plaintext; the pod's Envoy sidecar, with
// the init container's iptables rules, does everything mesh-related.
//
//   mesh-app serve --name bookstore-v1 [--http 8080] [--grpc 9090] [--tcp 7070]
//   mesh-app client
//   mesh-app serve ... --control 7777 [--drain-ms 3000]
//
// serve: HTTP answers every path with JSON {pod, method, path} (200), `/ready`
// and `/live` with "ok"; gRPC answers /skein.test.Echo/Who (and any path) with
// the pod name; TCP answers each line `x` with `<pod>:x`.
//
// client: reads one JSON command per stdin line and writes one JSON result per
// stdout line, so a test drives many calls through one process (and so one
// pod) without paying a process start per call:
//   {"id":1,"kind":"http","url":"http://bookstore:8080/books","count":20,"method":"GET","headers":{}}
//   {"id":2,"kind":"grpc","target":"bookstore:9090","count":5}
//   {"id":3,"kind":"tcp","host":"bookstore","port":7070,"count":5}
//   {"id":4,"kind":"load-start","call":{one of the above without id/count},"intervalMs":20}
//   {"id":5,"kind":"load-report"}   counts since the previous report, per outcome
//   {"id":6,"kind":"load-stop"}
// --control <port> also takes those commands as `POST /` bodies on that port (one
// JSON result per response), for a pod the test cannot exec into: the test node's
// pods, whose control port is excluded from interception by annotation.
// --first-call <url>: one HTTP GET the moment the app starts, before anything else,
// as an app that calls a dependency at start-up; `{"kind":"first-call"}` returns its
// outcome (the sidecar-ordering tests).
// --drain-ms: on SIGTERM, keep serving that long before exiting, as an app does
// while its endpoints are withdrawn (the shutdown-ordering tests).
// --fail-ratio <0..1>: that share of HTTP requests (probes excepted) answers 500,
// spread evenly (ratio 0.5 fails every second one): a flaky backend for the
// retry and outlier tests; --delay-ms <n>: every HTTP request (probes excepted)
// waits that long before the answer. An http command with "parallel" (or
// "concurrency"): n keeps n calls in flight until count are made.
// Each call's outcome is a string: `<status> <pod>` for HTTP (`200 bookstore-v1`),
// `OK <pod>` or the gRPC status name, `ok <pod>` or the socket error for TCP.
import { createServer as createHttpServer, type IncomingMessage, request } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect, createServer as createTcpServer, isIP } from 'node:net';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import * as grpc from '@grpc/grpc-js';

const WHO_METHOD = '/skein.test.Echo/Who';
const raw = (b: Buffer) => b;
const echoService = {
  Who: {
    path: WHO_METHOD,
    requestStream: false,
    responseStream: false,
    requestSerialize: raw,
    requestDeserialize: raw,
    responseSerialize: raw,
    responseDeserialize: raw,
  },
};

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    name: { type: 'string', default: 'app' },
    http: { type: 'string' },
    grpc: { type: 'string' },
    tcp: { type: 'string' },
    control: { type: 'string' },
    'drain-ms': { type: 'string', default: '0' },
    'first-call': { type: 'string' },
    'fail-ratio': { type: 'string', default: '0' },
    'delay-ms': { type: 'string', default: '0' },
  },
});

function emit(line: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

/** The --first-call outcome, started before the app listens. */
let firstCall: Promise<string> | undefined;

async function serve(): Promise<void> {
  const name = values.name;
  const first = values['first-call'];
  if (first) firstCall = call({ kind: 'http', url: first });
  const listening: Record<string, number> = {};
  if (values.http) {
    const port = Number(values.http);
    const failRatio = Number(values['fail-ratio']);
    const delayMs = Number(values['delay-ms']);
    let served = 0;
    const server = createHttpServer((req, res) => {
      if (req.url === '/ready' || req.url === '/live') {
        res.end('ok');
        return;
      }
      // Request n fails when n·ratio crosses an integer: exactly the ratio, evenly spread.
      const n = served++;
      const fail = Math.floor((n + 1) * failRatio) > Math.floor(n * failRatio);
      const answer = () => {
        res.statusCode = fail ? 500 : 200;
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ pod: name, method: req.method, path: req.url }));
      };
      if (delayMs > 0) setTimeout(answer, delayMs);
      else answer();
    });
    await new Promise<void>((resolve) => server.listen(port, '0.0.0.0', resolve));
    listening['http'] = port;
  }
  if (values.grpc) {
    const server = new grpc.Server();
    const answer: grpc.handleUnaryCall<Buffer, Buffer> = (_call, callback) =>
      callback(null, Buffer.from(name));
    server.addService(echoService, { Who: answer });
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync(`0.0.0.0:${values.grpc}`, grpc.ServerCredentials.createInsecure(), (err, p) =>
        err ? reject(err) : resolve(p),
      ),
    );
    listening['grpc'] = port;
  }
  if (values.tcp) {
    const port = Number(values.tcp);
    const server = createTcpServer((socket) => {
      createInterface({ input: socket })
        .on('line', (line) => socket.write(`${name}:${line}\n`))
        .on('error', () => socket.destroy());
      socket.on('error', () => socket.destroy());
    });
    await new Promise<void>((resolve) => server.listen(port, '0.0.0.0', resolve));
    listening['tcp'] = port;
  }
  if (values.control) {
    const port = Number(values.control);
    const commands = new Commands();
    const server = createHttpServer((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (d: string) => {
        body += d;
      });
      req.on('end', () => {
        void commands
          .handle({ id: 0, ...(JSON.parse(body) as object) } as Command)
          .then((out) => res.end(JSON.stringify(out)))
          .catch((err: unknown) => {
            res.statusCode = 500;
            res.end(String(err));
          });
      });
    });
    await new Promise<void>((resolve) => server.listen(port, '0.0.0.0', resolve));
    listening['control'] = port;
  }
  emit({ type: 'listening', name, ...listening });
  const drainMs = Number(values['drain-ms']);
  process.on('SIGTERM', () => {
    emit({ type: 'terminating', drainMs });
    setTimeout(() => process.exit(0), drainMs);
  });
}

interface HttpCall {
  kind: 'http';
  /** http: or https: (then `ca`, PEM, is the only trusted root, and `servername` the SNI). */
  url: string;
  method?: string;
  headers?: Record<string, string>;
  ca?: string;
  servername?: string;
  /** Response headers to record with the outcome's last body (`name: value` lines before it). */
  showHeaders?: string[];
}
interface GrpcCall {
  kind: 'grpc';
  target: string;
}
interface TcpCall {
  kind: 'tcp';
  host: string;
  port: number;
}
type Call = HttpCall | GrpcCall | TcpCall;

const CALL_TIMEOUT_MS = 5000;

/** The last body seen per outcome, so a test can show (and assert on) what a 403 said. */
const lastBody = new Map<string, string>();

function httpCall(c: HttpCall): Promise<string> {
  return new Promise((resolve) => {
    const options = {
      method: c.method ?? 'GET',
      headers: c.headers ?? {},
      timeout: CALL_TIMEOUT_MS,
      agent: false,
    };
    const send = c.url.startsWith('https:')
      ? (cb: (res: IncomingMessage) => void) =>
          httpsRequest(
            c.url,
            {
              ...options,
              ...(c.ca ? { ca: c.ca } : {}),
              ...(c.servername ? { servername: c.servername } : {}),
            },
            cb,
          )
      : (cb: (res: IncomingMessage) => void) => request(c.url, options, cb);
    const req = send((res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('end', () => {
        const body = Buffer.concat(chunks).toString();
        let pod = '';
        try {
          const parsed: unknown = JSON.parse(body);
          if (parsed && typeof parsed === 'object' && 'pod' in parsed) pod = String(parsed.pod);
        } catch {
          // Not an app answer (a proxy's local reply): keep the body for the test.
        }
        const outcome = pod ? `${res.statusCode} ${pod}` : `${res.statusCode}`;
        // A redirect says where to: its Location is what a test checks.
        const location = res.headers.location;
        const shown = (c.showHeaders ?? []).map(
          (h) => `${h}: ${String(res.headers[h.toLowerCase()] ?? '')}\n`,
        );
        lastBody.set(outcome, location ? `location: ${location}` : shown.join('') + body.slice(0, 500));
        resolve(outcome);
      });
    });
    // A timed-out call says how far it got, so a test's report shows where it hung: the
    // name lookup, the connection (to the sidecar's outbound listener), or the answer.
    let phase = isIP(new URL(c.url).hostname.replace(/^\[|\]$/g, '')) === 0 ? 'lookup' : 'connect';
    req.on('socket', (socket) => {
      socket.once('lookup', () => {
        phase = 'connect';
      });
      socket.once('connect', () => {
        phase = 'response';
      });
    });
    req.on('timeout', () => req.destroy(new Error(`timeout (${phase})`)));
    req.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    req.end();
  });
}

const grpcClients = new Map<string, grpc.Client>();
const GenericClient = grpc.makeGenericClientConstructor(echoService, 'Echo');

function grpcCall(c: GrpcCall): Promise<string> {
  let client = grpcClients.get(c.target);
  if (!client) {
    client = new GenericClient(`dns:///${c.target}`, grpc.credentials.createInsecure());
    grpcClients.set(c.target, client);
  }
  const ch = client;
  return new Promise((resolve) => {
    ch.makeUnaryRequest(
      WHO_METHOD,
      raw,
      raw,
      Buffer.alloc(0),
      new grpc.Metadata(),
      { deadline: Date.now() + CALL_TIMEOUT_MS },
      (err, res) => {
        if (err) resolve(grpc.status[err.code] ?? String(err.code));
        else resolve(`OK ${res?.toString() ?? ''}`);
      },
    );
  });
}

function tcpCall(c: TcpCall): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ host: c.host, port: c.port, timeout: CALL_TIMEOUT_MS });
    let settled = false;
    const done = (outcome: string) => {
      if (settled) return;
      settled = true;
      socket.destroy();
      resolve(outcome);
    };
    socket.on('connect', () => socket.write('ping\n'));
    // readline re-emits the socket's errors (a reset from a denying proxy): they are outcomes too.
    createInterface({ input: socket })
      .on('line', (line) => {
        const m = /^(.*):ping$/.exec(line);
        done(m ? `ok ${m[1]}` : `bad ${line}`);
      })
      .on('error', (err: NodeJS.ErrnoException) => done(err.code ?? err.message));
    socket.on('timeout', () => done('timeout'));
    socket.on('error', (err: NodeJS.ErrnoException) => done(err.code ?? err.message));
    socket.on('close', () => done('closed'));
  });
}

function call(c: Call): Promise<string> {
  if (c.kind === 'http') return httpCall(c);
  if (c.kind === 'grpc') return grpcCall(c);
  return tcpCall(c);
}

function count(into: Record<string, number>, outcome: string): void {
  into[outcome] = (into[outcome] ?? 0) + 1;
}

interface Load {
  stopped: boolean;
  counts: Record<string, number>;
  done: Promise<void>;
}

type Command =
  | ({ id: number; count?: number; parallel?: number; concurrency?: number } & Call)
  | { id: number; kind: 'load-start'; call: Call; intervalMs?: number }
  | { id: number; kind: 'load-report' | 'load-stop' }
  | { id: number; kind: 'first-call' };

/** One client's state: at most one background load, and the commands that drive it. */
class Commands {
  private load: Load | undefined;

  async handle(cmd: Command): Promise<Record<string, unknown>> {
    const bodies = () => Object.fromEntries(lastBody);
    if (cmd.kind === 'load-start') {
      const l: Load = { stopped: false, counts: {}, done: Promise.resolve() };
      const what = cmd.call;
      l.done = (async () => {
        while (!l.stopped) {
          count(l.counts, await call(what));
          await new Promise((r) => setTimeout(r, cmd.intervalMs ?? 20));
        }
      })();
      this.load = l;
      return { id: cmd.id, started: true };
    }
    if (cmd.kind === 'first-call') return { id: cmd.id, outcome: firstCall ? await firstCall : 'none' };
    if (cmd.kind === 'load-report' || cmd.kind === 'load-stop') {
      const load = this.load;
      if (load && cmd.kind === 'load-stop') {
        load.stopped = true;
        await load.done;
      }
      const out = { id: cmd.id, counts: load?.counts ?? {}, bodies: bodies() };
      if (load) load.counts = {};
      if (cmd.kind === 'load-stop') this.load = undefined;
      return out;
    }
    if (cmd.kind !== 'http' && cmd.kind !== 'grpc' && cmd.kind !== 'tcp')
      throw new Error(`unknown command ${cmd.kind}`);
    const counts: Record<string, number> = {};
    let left = cmd.count ?? 1;
    const worker = async () => {
      // Taken before the call, so the workers together make exactly `count` calls.
      while (left > 0) {
        left--;
        count(counts, await call(cmd));
      }
    };
    const t0 = performance.now();
    await Promise.all(Array.from({ length: Math.max(1, cmd.parallel ?? cmd.concurrency ?? 1) }, worker));
    return { id: cmd.id, counts, bodies: bodies(), ms: Math.round(performance.now() - t0) };
  }
}

async function client(): Promise<void> {
  const commands = new Commands();
  for await (const line of createInterface({ input: process.stdin })) {
    const cmd = JSON.parse(line) as Command;
    if (
      cmd.kind === 'load-start' ||
      cmd.kind === 'load-report' ||
      cmd.kind === 'load-stop' ||
      cmd.kind === 'http' ||
      cmd.kind === 'grpc' ||
      cmd.kind === 'tcp'
    )
      emit(await commands.handle(cmd));
  }
}

const mode = positionals[0];
if (mode === 'serve') await serve();
else if (mode === 'client') await client();
else {
  process.stderr.write('usage: mesh-app serve|client [flags]\n');
  process.exit(2);
}
