// A child process of the test infrastructure (cluster or node component): its output
// kept as a bounded tail for error messages, line waiters for readiness, a graceful
// stop, and a kill when the test process exits without stopping it.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { recordChildLine } from './child-logs.js';

const LOG_TAIL = 200;

export class Component {
  readonly tail: string[] = [];
  readonly exited: Promise<void>;
  private readonly lineWaiters = new Set<(line: string) => void>();

  constructor(
    readonly name: string,
    readonly child: ChildProcess,
    verbose: boolean,
  ) {
    const onLine = (line: string) => {
      recordChildLine(name, line);
      this.tail.push(line);
      if (this.tail.length > LOG_TAIL) this.tail.shift();
      if (verbose) process.stderr.write(`[${name}] ${line}\n`);
      for (const w of [...this.lineWaiters]) w(line);
    };
    if (child.stdout) createInterface({ input: child.stdout }).on('line', onLine);
    if (child.stderr) createInterface({ input: child.stderr }).on('line', onLine);
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  describe(): string {
    return `${this.name} (exit ${this.child.exitCode ?? this.child.signalCode ?? 'none'}); last log lines:\n${this.tail.slice(-30).join('\n')}`;
  }

  /** The first output line `pick` maps to a value; rejects on exit or timeout. */
  waitForLine<T>(pick: (line: string) => T | undefined, timeoutMs: number): Promise<T> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => fail(new Error(`${this.name} not ready in ${timeoutMs} ms: ${this.describe()}`)),
        timeoutMs,
      );
      const onExit = () => fail(new Error(`${this.name} exited before it was ready: ${this.describe()}`));
      const waiter = (line: string) => {
        const value = pick(line);
        if (value === undefined) return;
        cleanup();
        resolve(value);
      };
      const cleanup = () => {
        clearTimeout(timer);
        this.lineWaiters.delete(waiter);
        this.child.off('exit', onExit);
      };
      const fail = (err: Error) => {
        cleanup();
        reject(err);
      };
      this.lineWaiters.add(waiter);
      this.child.once('exit', onExit);
    });
  }

  /** SIGTERM, then SIGKILL if it has not exited after `graceMs`. */
  async stop(graceMs = 10_000): Promise<void> {
    if (!this.running) return;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    await this.exited;
    clearTimeout(timer);
  }
}

/** Every component still running in this process, killed if the process exits without stop(). */
const live = new Set<Component>();
export const liveDirs = new Set<string>();
process.once('exit', () => {
  for (const c of live) c.child.kill('SIGKILL');
  for (const d of liveDirs) rmSync(d, { recursive: true, force: true });
});

export interface SpawnOptions {
  /** Extra environment variables. */
  env?: NodeJS.ProcessEnv;
  /**
   * The Go mains of test/cluster exit when stdin reaches EOF (TESTCLUSTER_LIFELINE);
   * false for other programs (containerd), which the owner must clean up itself.
   */
  lifeline?: boolean;
  /** What to run when `bin` is missing, for the error message; default `make cluster-bin`. */
  buildHint?: string;
}

export function spawnComponent(
  name: string,
  bin: string,
  args: string[],
  verbose: boolean,
  opts: SpawnOptions = {},
): Component {
  if (!existsSync(bin))
    throw new Error(`${bin} is missing: run \`${opts.buildHint ?? 'make cluster-bin'}\` first`);
  const lifeline = opts.lifeline ?? true;
  const child = spawn(bin, args, {
    // The lifeline: the Go mains exit when stdin reaches EOF, i.e. when this
    // process dies without stopping them (kill -9, a crashed test runner).
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, ...opts.env, ...(lifeline ? { TESTCLUSTER_LIFELINE: 'stdin' } : {}) },
  });
  const c = new Component(name, child, verbose);
  live.add(c);
  void c.exited.then(() => live.delete(c));
  return c;
}
