#!/usr/bin/env node
// `make demo`: the controller in local mode on a private copy of
// examples/bookstore, proxyless gRPC bookstore servers and bookbuyer /
// bookthief callers on loopback, and a live table of who answered whom.
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { DemoChild } from './children.js';
import { copyManifests, type DemoPod, readPods } from './manifests.js';
import { portProblem } from './ports.js';
import { CallerStats, statsOf } from './stats.js';
import { formatRow, headerLine, rowsFor, waitingLine } from './table.js';

const USAGE = `skein demo — controller + proxyless gRPC bookstore apps on loopback, with live counts

Usage: node dist/test/demo/main.js [--duration <seconds>] [--port-offset <n>]

  --duration <s>     stop by itself after <s> seconds of traffic (default: run until Ctrl-C)
  --port-offset <n>  add <n> to every workload port of the example (e.g. to run two demos)
  -h, --help         show this help
`;

/** Exit code when a workload port is taken (another demo or `make start` workloads). */
export const EXIT_PORT_BUSY = 3;

const distRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const repoRoot = path.dirname(distRoot);
const exampleDir = path.join(repoRoot, 'examples', 'bookstore');
const controllerScript = path.join(distRoot, 'cmd', 'skein-controller', 'main.js');
const workloadScript = path.join(distRoot, 'test', 'apps', 'workload.js');

const SERVERS = ['bookstore-v1', 'bookstore-v2', 'bookwarehouse'];
const CALLERS = ['bookbuyer', 'bookthief'];
const TARGET = 'xds:///bookstore.bookstore.svc.cluster.local:14001';
const WINDOW_S = 5;
const STARTUP_TIMEOUT_MS = 30_000;

interface DemoOptions {
  durationS?: number;
  portOffset: number;
}

class UsageError extends Error {}
/** Ctrl-C before the traffic started: a normal stop. */
class Interrupted extends Error {}
/** A failure worth a plain message (not a stack trace); `code` is the exit code. */
class DemoError extends Error {
  constructor(
    message: string,
    readonly code = 1,
  ) {
    super(message);
  }
}

function parseOptions(argv: string[]): DemoOptions | 'help' {
  let values: { duration?: string; 'port-offset'?: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      args: argv,
      strict: true,
      options: {
        duration: { type: 'string' },
        'port-offset': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
  if (values.help) return 'help';
  const opts: DemoOptions = { portOffset: 0 };
  if (values.duration !== undefined) {
    const d = Number(values.duration);
    if (!Number.isFinite(d) || d <= 0)
      throw new UsageError(`--duration: ${values.duration} is not a positive number`);
    opts.durationS = d;
  }
  if (values['port-offset'] !== undefined) {
    const n = Number(values['port-offset']);
    if (!Number.isInteger(n))
      throw new UsageError(`--port-offset: ${values['port-offset']} is not an integer`);
    opts.portOffset = n;
  }
  return opts;
}

/** Resolves when the demo should stop, with the reason (undefined: asked to). */
class StopSignal {
  reason: string | undefined;
  requested = false;
  readonly promise: Promise<void>;
  private resolve!: () => void;

  constructor() {
    this.promise = new Promise((r) => {
      this.resolve = r;
    });
  }

  request(reason?: string): void {
    if (this.requested) return;
    this.requested = true;
    this.reason = reason;
    this.resolve();
  }
}

class Demo {
  private readonly children: DemoChild[] = [];
  private readonly callers: DemoChild[] = [];
  private readonly servers: DemoChild[] = [];
  private controller: DemoChild | undefined;
  private readonly stats = new Map<string, CallerStats>(CALLERS.map((c) => [c, new CallerStats()]));
  private controllerNote: string | undefined;
  private drawn = 0;
  private trafficStart = 0;
  readonly stop = new StopSignal();
  readonly tty = process.stdout.isTTY === true;

  constructor(
    private readonly opts: DemoOptions,
    readonly root: string,
  ) {}

  get manifests(): string {
    return path.join(this.root, 'manifests');
  }

  private get stateDir(): string {
    return path.join(this.root, 'state');
  }

  private get logs(): string {
    return path.join(this.root, 'logs');
  }

  async run(): Promise<void> {
    try {
      await copyManifests(exampleDir, this.manifests, this.opts.portOffset);
    } catch (err) {
      if (err instanceof RangeError) throw new UsageError(`--port-offset: ${err.message}`);
      throw err;
    }
    await mkdir(this.logs, { recursive: true });
    const pods = new Map((await readPods(this.manifests)).map((p) => [p.name, p]));
    const pod = (name: string): DemoPod => {
      const p = pods.get(name);
      if (!p) throw new DemoError(`the example has no Pod ${name} with an IP and a containerPort`);
      return p;
    };
    for (const name of SERVERS) {
      const p = pod(name);
      const problem = await portProblem(p.ip, p.port);
      if (problem === 'EADDRINUSE')
        throw new DemoError(
          `port ${p.port} (${name}, ${p.ip}:${p.port}) is already in use: another \`make demo\`, or workloads ` +
            `started next to \`make start\`, may be running. Stop it, or shift this demo's ports with ` +
            `--port-offset <n>.`,
          EXIT_PORT_BUSY,
        );
      if (problem)
        throw new DemoError(
          `cannot listen on ${p.ip}:${p.port} for ${name} (${problem}); the demo needs the 127.0.0.0/8 ` +
            `loopback addresses of the example (Linux has them; on macOS add aliases with ` +
            `\`sudo ifconfig lo0 alias ${p.ip}\`).`,
        );
    }

    say(`skein demo — manifests: ${this.manifests}`);
    say('  edit split.yaml / meshconfig.yaml there and watch the numbers change');
    say(`  logs: ${this.logs}`);
    const ready = await this.startController();
    say(
      `controller ready: ADS (mTLS) 127.0.0.1:${ready['ads']}, plaintext ADS 127.0.0.1:${ready['insecureAds']}, ` +
        `health http://127.0.0.1:${ready['http']}/readyz`,
    );
    await this.untilStop(this.waitForBootstraps([...SERVERS, ...CALLERS].map(pod)));
    await this.untilStop(Promise.all(SERVERS.map((name) => this.startServer(pod(name)))));
    say(`servers listening: ${SERVERS.map((n) => `${n} ${pod(n).ip}:${pod(n).port}`).join(', ')}`);
    for (const name of CALLERS) this.startCaller(pod(name));
    say(`callers: ${CALLERS.join(', ')} → ${TARGET}, a call every 20 ms; Ctrl-C stops everything`);
    say('');
    this.trafficStart = Date.now();

    const timers: NodeJS.Timeout[] = [setInterval(() => this.draw(), 1000)];
    if (this.opts.durationS !== undefined)
      timers.push(setTimeout(() => this.stop.request(), this.opts.durationS * 1000));
    await this.stop.promise;
    for (const t of timers) clearTimeout(t);
    await Promise.all(this.callers.map((c) => c.stop()));
    this.draw(true);
    if (this.stop.reason) throw new DemoError(this.stop.reason);
  }

  /** Stops every child: callers, then servers, then the controller. */
  async shutdown(): Promise<void> {
    await Promise.all(this.callers.map((c) => c.stop()));
    await Promise.all(this.servers.map((c) => c.stop()));
    await this.controller?.stop();
  }

  /** Last resort for a process 'exit' handler or a second Ctrl-C. */
  killAll(): void {
    for (const c of this.children) c.kill();
  }

  private spawn(
    name: string,
    script: string,
    args: string[],
    env: NodeJS.ProcessEnv,
    onLine: (l: Record<string, unknown>) => void,
  ): DemoChild {
    const child = new DemoChild(name, script, args, env, path.join(this.logs, `${name}.log`), onLine);
    this.children.push(child);
    void child.exited.then(() => {
      if (!this.stop.requested)
        this.stop.request(
          `${name} exited unexpectedly (${child.ending}); its last lines:\n  ${child.lastLines().join('\n  ')}\n` +
            `(full log: ${child.logFile})`,
        );
    });
    return child;
  }

  /** Waits for `p`, or throws once a stop was requested (Ctrl-C, a child died). */
  private async untilStop<T>(p: Promise<T>): Promise<T> {
    const stopped = this.stop.promise.then((): never => {
      throw this.stop.reason ? new DemoError(this.stop.reason) : new Interrupted();
    });
    return Promise.race([p, stopped]);
  }

  /** Resolves with the first line matching `pred`; rejects after a timeout. */
  private lineWaiter(what: string): {
    onLine: (pred: (l: Record<string, unknown>) => boolean) => (l: Record<string, unknown>) => void;
    line: Promise<Record<string, unknown>>;
  } {
    let resolve!: (l: Record<string, unknown>) => void;
    let reject!: (err: Error) => void;
    const line = new Promise<Record<string, unknown>>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    const timer = setTimeout(
      () => reject(new DemoError(`${what} did not happen within ${STARTUP_TIMEOUT_MS / 1000} s`)),
      STARTUP_TIMEOUT_MS,
    );
    return {
      line,
      onLine: (pred) => (l) => {
        if (pred(l)) {
          clearTimeout(timer);
          resolve(l);
        }
      },
    };
  }

  private async startController(): Promise<Record<string, unknown>> {
    const ready = this.lineWaiter('controller start');
    const isReady = ready.onLine((l) => l['msg'] === 'skein controller ready');
    this.controller = this.spawn(
      'controller',
      controllerScript,
      [
        '--local',
        this.manifests,
        '--state-dir',
        this.stateDir,
        '--host',
        '127.0.0.1',
        '--ads-port',
        '0',
        '--insecure-ads-port',
        '0',
        '--http-port',
        '0',
        '--log-level',
        'info',
      ],
      { SKEIN_LOG_LEVEL: 'info' },
      (l) => {
        isReady(l);
        this.noteControllerLine(l);
      },
    );
    return this.untilStop(ready.line);
  }

  /** Remembers the controller's last warning (or "resolved") to show under the table. */
  private noteControllerLine(l: Record<string, unknown>): void {
    const level = typeof l['level'] === 'number' ? l['level'] : 0;
    const msg = typeof l['msg'] === 'string' ? l['msg'] : '';
    if (level < 40 && !msg.includes('resolved')) return;
    if (msg.startsWith('plaintext ADS')) return; // expected: the demo asks for it
    const details = ['file', 'kind', 'name', 'reason', 'problem']
      .map((k) => l[k])
      .filter((v) => typeof v === 'string')
      .map((v) => (v.startsWith(this.manifests) ? path.relative(this.manifests, v) : v));
    const at = new Date().toTimeString().slice(0, 8);
    this.controllerNote = `${at} controller ${level >= 50 ? 'error' : level >= 40 ? 'warning' : 'info'}: ${msg}${details.length ? ` (${details.join(', ')})` : ''}`;
  }

  private async waitForBootstraps(pods: DemoPod[]): Promise<void> {
    const files = pods.map((p) => this.bootstrapFile(p));
    const deadline = Date.now() + STARTUP_TIMEOUT_MS;
    for (;;) {
      const missing = files.filter((f) => !existsSync(f));
      if (missing.length === 0) return;
      if (Date.now() > deadline)
        throw new DemoError(`the controller wrote no bootstrap ${missing.join(', ')}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  private bootstrapFile(p: DemoPod): string {
    return path.join(this.stateDir, 'bootstrap', p.namespace, `${p.name}.json`);
  }

  private async startServer(p: DemoPod): Promise<void> {
    const listening = this.lineWaiter(`${p.name} listening on ${p.ip}:${p.port}`);
    const child = this.spawn(
      p.name,
      workloadScript,
      ['server', '--name', p.name, '--listen', `${p.ip}:${p.port}`],
      { GRPC_XDS_BOOTSTRAP: this.bootstrapFile(p) },
      listening.onLine((l) => l['type'] === 'listening'),
    );
    this.servers.push(child);
    await listening.line;
  }

  private startCaller(p: DemoPod): void {
    const stats = this.stats.get(p.name);
    const child = this.spawn(
      p.name,
      workloadScript,
      ['caller', '--target', TARGET, '--interval-ms', '20'],
      { GRPC_XDS_BOOTSTRAP: this.bootstrapFile(p) },
      (l) => {
        const t = statsOf(l);
        if (t && stats) stats.add(t, Date.now());
      },
    );
    this.callers.push(child);
  }

  /** A line of its own: the next table starts below it instead of redrawing over it. */
  message(line: string): void {
    process.stdout.write(`\n${line}\n`);
    this.drawn = 0;
  }

  /** Prints the table: redrawn in place on a terminal, appended otherwise. */
  private draw(final = false): void {
    const now = Date.now();
    const seconds = Math.round((now - this.trafficStart) / 1000);
    const lines: string[] = [];
    lines.push(final ? `final counts after ${seconds}s:` : `after ${seconds}s:`);
    lines.push(headerLine(WINDOW_S));
    for (const [caller, s] of this.stats) {
      const rows = rowsFor(caller, s.window(now, WINDOW_S * 1000), s.total);
      if (rows.length === 0) lines.push(waitingLine(caller));
      for (const r of rows) lines.push(formatRow(r));
    }
    if (this.controllerNote) lines.push(this.controllerNote);
    if (this.tty) {
      // Cursor up over the previous block, clear to the end of the screen, redraw;
      // lines are cut to the width so none wraps and the count stays right.
      const columns = process.stdout.columns || 100;
      const width = Math.max(20, columns - 1);
      const up = this.drawn > 0 ? `\x1b[${this.drawn}F\x1b[J` : '';
      process.stdout.write(`${up}${lines.map((l) => l.slice(0, width)).join('\n')}\n`);
      this.drawn = lines.length;
    } else {
      process.stdout.write(`${lines.join('\n')}\n\n`);
    }
  }
}

function say(line: string): void {
  process.stdout.write(`${line}\n`);
}

async function main(argv: string[]): Promise<number> {
  let opts: DemoOptions | 'help';
  try {
    opts = parseOptions(argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`demo: ${err.message}\n\n${USAGE}`);
    return 2;
  }
  if (opts === 'help') {
    process.stdout.write(USAGE);
    return 0;
  }
  const demo = new Demo(opts, await mkdtemp(path.join(tmpdir(), 'skein-demo-')));
  // Piped into `head`, say: stop quietly instead of crashing on EPIPE.
  process.stdout.on('error', () => demo.stop.request());
  process.on('exit', () => demo.killAll());
  const onSignal = (signal: NodeJS.Signals) => {
    if (demo.stop.requested) {
      // Second Ctrl-C: do not wait for anyone.
      demo.killAll();
      process.exit(130);
    }
    demo.message(`${signal}: stopping every demo process…`);
    demo.stop.request();
  };
  for (const s of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(s, onSignal);

  let code = 0;
  try {
    await demo.run();
  } catch (err) {
    if (err instanceof Interrupted) return finish(demo, 0);
    code = err instanceof DemoError ? err.code : err instanceof UsageError ? 2 : 1;
    const message = err instanceof DemoError || err instanceof UsageError ? err.message : String(err);
    process.stderr.write(`demo: ${message}\n`);
  }
  return finish(demo, code);
}

/** Stops the children; removes the temp dir unless there is something to look into. */
async function finish(demo: Demo, code: number): Promise<number> {
  await demo.shutdown();
  if (code === 0 || code === EXIT_PORT_BUSY || code === 2) {
    await rm(demo.root, { recursive: true, force: true });
    if (code === 0) say('demo stopped; all its processes have exited.');
  } else {
    process.stderr.write(`demo: kept ${demo.root} (manifests, state, logs) for a look\n`);
  }
  return code;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`demo: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
