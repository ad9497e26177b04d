import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { createInterface } from 'node:readline';
import { recordChildLine } from './child-logs.js';

/** A child process whose stdout is JSON lines (pino logs, workload reports). */
export class JsonLineProcess {
  readonly lines: Record<string, unknown>[] = [];
  readonly stderr: string[] = [];
  private readonly waiters = new Set<() => void>();
  readonly exited: Promise<number | null>;

  constructor(
    readonly name: string,
    readonly child: ChildProcess,
  ) {
    if (!child.stdout || !child.stderr) throw new Error('spawn with stdio pipes');
    createInterface({ input: child.stdout }).on('line', (line) => {
      recordChildLine(name, line);
      try {
        const parsed: unknown = JSON.parse(line);
        if (parsed && typeof parsed === 'object' && !Array.isArray(parsed))
          this.lines.push(parsed as Record<string, unknown>);
      } catch {
        this.stderr.push(line);
      }
      for (const w of [...this.waiters]) w();
    });
    createInterface({ input: child.stderr }).on('line', (line) => {
      recordChildLine(name, line);
      this.stderr.push(line);
    });
    this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  }

  /** Resolves with the first line (from `from` on) matching `pred`; rejects after `timeoutMs`. */
  waitFor(
    pred: (line: Record<string, unknown>) => boolean,
    timeoutMs = 10_000,
    from = 0,
  ): Promise<Record<string, unknown>> {
    return new Promise((resolve, reject) => {
      let index = from;
      const check = () => {
        for (; index < this.lines.length; index++) {
          const line = this.lines[index];
          if (line && pred(line)) {
            cleanup();
            resolve(line);
            return;
          }
        }
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(
          new Error(
            `${this.name}: no matching line within ${timeoutMs} ms; stderr:\n${this.stderr.slice(-20).join('\n')}`,
          ),
        );
      }, timeoutMs);
      const cleanup = () => {
        clearTimeout(timer);
        this.waiters.delete(check);
      };
      this.waiters.add(check);
      check();
    });
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 3000);
    await this.exited;
    clearTimeout(timer);
  }
}

export function spawnNode(
  name: string,
  script: string,
  args: string[],
  env: NodeJS.ProcessEnv = {},
): JsonLineProcess {
  const child = spawn(process.execPath, [script, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new JsonLineProcess(name, child);
}

// Linux hands out ephemeral ports (outgoing connections, port 0) from
// 32768–60999: a port picked there and released can be taken by any outgoing
// connection before our server binds it. Pick below that range instead.
const PICK_FROM = 20_000;
const PICK_TO = 32_000;

function tryListen(port: number): Promise<import('node:net').Server | undefined> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(undefined));
    // All interfaces: grpc-js-xds servers bind their port on every interface.
    s.listen({ port, host: '::', ipv6Only: false }, () => resolve(s));
  });
}

/**
 * Distinct ports free right now on every interface, outside the kernel's
 * ephemeral range (so no outgoing connection takes one before it is used).
 */
export async function freePorts(n: number): Promise<number[]> {
  const held: import('node:net').Server[] = [];
  const ports: number[] = [];
  try {
    for (let attempts = 0; ports.length < n; attempts++) {
      if (attempts > 1000) throw new Error(`no ${n} free ports in ${PICK_FROM}-${PICK_TO}`);
      const port = PICK_FROM + Math.floor(Math.random() * (PICK_TO - PICK_FROM));
      if (ports.includes(port)) continue;
      const server = await tryListen(port);
      if (!server) continue;
      held.push(server);
      ports.push(port);
    }
  } finally {
    await Promise.all(held.map((s) => new Promise((r) => s.close(r))));
  }
  return ports;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
