// Every line a test's child process prints (controllers, Envoys, agents, cluster and node
// components), kept under $SKEIN_TEST_LOG_DIR so test/run.ts can check, after the whole suite,
// that no log line carries key material (test/support/key-scan.ts). Without the variable (a
// single file run outside test/run.ts) nothing is written.
//
// One file per test process, each line prefixed with the child's name; lines are buffered and
// appended every 250 ms (and synchronously at exit), so a chatty child costs one write per
// interval, not one per line.
import { appendFile, appendFileSync, existsSync, mkdirSync } from 'node:fs';
import { cp } from 'node:fs/promises';
import path from 'node:path';

export const TEST_LOG_DIR_ENV = 'SKEIN_TEST_LOG_DIR';

const FLUSH_MS = 250;

let file: string | undefined;
let pending: string[] = [];
let flushScheduled = false;

function logFile(): string | undefined {
  if (file !== undefined) return file;
  const dir = process.env[TEST_LOG_DIR_ENV];
  if (!dir) return undefined;
  mkdirSync(dir, { recursive: true });
  const target = path.join(dir, `children-${process.pid}.log`);
  file = target;
  process.once('exit', () => {
    if (pending.length > 0) appendFileSync(target, pending.join(''));
    pending = [];
  });
  return target;
}

function flush(): void {
  flushScheduled = false;
  const target = logFile();
  if (!target || pending.length === 0) return;
  const text = pending.join('');
  pending = [];
  appendFile(target, text, (err) => {
    if (err) process.stderr.write(`child-logs: ${target}: ${err.message}\n`);
  });
}

/** Records one output line of the child `name`, when the suite keeps logs. */
export function recordChildLine(name: string, line: string): void {
  if (!logFile()) return;
  pending.push(`[${name}] ${line}\n`);
  if (flushScheduled) return;
  flushScheduled = true;
  setTimeout(flush, FLUSH_MS).unref();
}

/**
 * Copies log files a child wrote itself (the test node's pod logs, which the kubelet writes)
 * under `<log dir>/<name>-<pid>/`, before their owner removes them; when the suite keeps logs.
 */
export async function keepLogFiles(name: string, dir: string): Promise<void> {
  const logDir = process.env[TEST_LOG_DIR_ENV];
  if (!logDir || !existsSync(dir)) return;
  await cp(dir, path.join(logDir, `${name}-${process.pid}`), { recursive: true, dereference: false }).catch(
    (err: unknown) => process.stderr.write(`child-logs: ${dir}: ${String(err)}\n`),
  );
}
