// The demo's child processes: each in its own process group, so a Ctrl-C at
// the terminal reaches only the demo, which then stops them in order (callers,
// servers, controller) instead of all dying at once.
import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';
import { createInterface } from 'node:readline';

export class DemoChild {
  readonly exited: Promise<void>;
  private readonly child: ChildProcess;
  private readonly log: WriteStream;
  private readonly tail: string[] = [];

  constructor(
    readonly name: string,
    script: string,
    args: string[],
    env: NodeJS.ProcessEnv,
    readonly logFile: string,
    onLine: (line: Record<string, unknown>) => void,
  ) {
    this.log = createWriteStream(logFile, { flags: 'a' });
    this.child = spawn(process.execPath, [script, ...args], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const { stdout, stderr } = this.child;
    if (!stdout || !stderr) throw new Error('spawned without stdio pipes');
    createInterface({ input: stdout }).on('line', (text) => {
      this.record(text);
      const parsed = parseObject(text);
      if (parsed) onLine(parsed);
    });
    createInterface({ input: stderr }).on('line', (text) => this.record(text));
    // A failed spawn emits 'error' and may never emit 'exit'.
    this.exited = new Promise((resolve) => {
      this.child.once('exit', () => resolve());
      this.child.once('error', (err) => {
        this.record(`spawn failed: ${err.message}`);
        resolve();
      });
    });
    // 'close' comes after the pipes drained, so the log has every line.
    this.child.once('close', () => this.log.end());
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null && this.child.pid !== undefined;
  }

  /** How it ended, for messages: `exit code 1`, `signal SIGKILL`. */
  get ending(): string {
    if (this.child.signalCode) return `signal ${this.child.signalCode}`;
    return `exit code ${this.child.exitCode}`;
  }

  /** The last lines it wrote (stdout and stderr). */
  lastLines(n = 15): string[] {
    return this.tail.slice(-n);
  }

  /** SIGTERM, then SIGKILL after `graceMs`; resolves once the process is gone. */
  async stop(graceMs = 3000): Promise<void> {
    if (!this.running) return;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.kill(), graceMs);
    await this.exited;
    clearTimeout(timer);
  }

  /** Synchronous last resort (usable from a process 'exit' handler). */
  kill(): void {
    if (this.running) this.child.kill('SIGKILL');
  }

  private record(text: string): void {
    this.log.write(`${text}\n`);
    this.tail.push(text);
    if (this.tail.length > 50) this.tail.shift();
  }
}

function parseObject(text: string): Record<string, unknown> | undefined {
  if (!text.startsWith('{')) return undefined;
  try {
    const v: unknown = JSON.parse(text);
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return undefined;
    return Object.fromEntries(Object.entries(v));
  } catch {
    return undefined;
  }
}
