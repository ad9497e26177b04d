// A small driver for the helm binary, for `skein install` / `skein uninstall`:
// runs `helm upgrade --install`, `helm uninstall` and `helm status` with every
// output line passed on as it arrives. skein does not embed Helm: it runs the
// user's (or $SKEIN_HELM), the way OSM's and Linkerd's CLIs leave chart
// rendering to the tools users already have.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { isRecord } from '../schema/guards.js';

export {
  type ControllerProgress,
  type WaitForControllerOptions,
  waitForController,
} from './controller-ready.js';

/** Names the helm binary to run; otherwise `helm` is looked up on PATH. */
export const HELM_ENV = 'SKEIN_HELM';

/** The helm binary could not be started (not installed, not on PATH, not executable). */
export class HelmNotFoundError extends Error {
  override name = 'HelmNotFoundError';
  constructor(readonly helmPath: string) {
    super(
      `helm not found (tried ${JSON.stringify(helmPath)}): skein installs its chart with Helm 3. ` +
        `Install Helm 3 (https://helm.sh/docs/intro/install/) and put it on PATH, ` +
        `or set ${HELM_ENV}=/path/to/helm`,
    );
  }
}

/** helm ran and exited non-zero; `message` carries its own error lines. */
export class HelmError extends Error {
  override name = 'HelmError';
  constructor(
    readonly args: readonly string[],
    readonly exitCode: number,
    readonly stderr: string,
  ) {
    const said = stderr.trim().split('\n').slice(-5).join('\n') || '(no output)';
    super(`helm ${args[0] ?? ''} failed (exit ${exitCode}): ${said}`);
  }
}

/** Where and how to run helm; shared by every command here. */
export interface HelmContext {
  /** The helm binary; default $SKEIN_HELM, else `helm` on PATH. */
  helmPath?: string;
  /** --kubeconfig (default: helm's own, i.e. $KUBECONFIG or ~/.kube/config). */
  kubeconfig?: string;
  /** --kube-context (default: the kubeconfig's current context). */
  kubeContext?: string;
  /** Environment for helm, merged over process.env (e.g. HELM_CACHE_HOME). */
  env?: Record<string, string | undefined>;
  /** Every line helm prints, as it prints it (progress for the user). */
  onLine?: (line: string, stream: 'stdout' | 'stderr') => void;
  /** Adds --debug: helm then reports each resource it creates, updates or waits for. */
  verbose?: boolean;
  /** Kills helm (SIGTERM) when aborted. */
  signal?: AbortSignal;
}

export interface HelmRunResult {
  stdout: string;
  stderr: string;
}

/** The helm binary a context runs: its helmPath, else $SKEIN_HELM, else `helm`. */
export function resolveHelmPath(ctx: Pick<HelmContext, 'helmPath'> = {}, env = process.env): string {
  return ctx.helmPath ?? (env[HELM_ENV] || 'helm');
}

/** charts/skein of this installation (found by walking up from this module, as pkg/schema finds the CRDs). */
export function defaultChartPath(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  for (let dir = here; dir !== path.dirname(dir); dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'charts', 'skein');
    if (existsSync(path.join(candidate, 'Chart.yaml'))) return candidate;
  }
  throw new Error(`charts/skein not found above ${here}`);
}

/**
 * Runs `helm <args>` plus the context's global flags. Resolves with the whole
 * output on exit 0; rejects with HelmNotFoundError when helm cannot be
 * started, HelmError on a non-zero exit.
 */
export function runHelm(args: readonly string[], ctx: HelmContext = {}): Promise<HelmRunResult> {
  const helmPath = resolveHelmPath(ctx);
  const full = [...args];
  if (ctx.kubeconfig) full.push('--kubeconfig', ctx.kubeconfig);
  if (ctx.kubeContext) full.push('--kube-context', ctx.kubeContext);
  if (ctx.verbose) full.push('--debug');
  return new Promise((resolve, reject) => {
    const child = spawn(helmPath, full, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...ctx.env },
      ...(ctx.signal ? { signal: ctx.signal } : {}),
    });
    const out: string[] = [];
    const err: string[] = [];
    const collect = (stream: 'stdout' | 'stderr', lines: string[]) => (line: string) => {
      lines.push(line);
      ctx.onLine?.(line, stream);
    };
    const streams: Promise<void>[] = [];
    for (const [name, readable, lines] of [
      ['stdout', child.stdout, out],
      ['stderr', child.stderr, err],
    ] as const) {
      const rl = createInterface({ input: readable });
      rl.on('line', collect(name, lines));
      streams.push(new Promise((r) => rl.once('close', () => r())));
    }
    let spawnError: Error | undefined;
    child.once('error', (e) => {
      spawnError = e;
    });
    child.once('close', (code, signal) => {
      void Promise.all(streams).then(() => {
        if (
          spawnError &&
          'code' in spawnError &&
          (spawnError.code === 'ENOENT' || spawnError.code === 'EACCES')
        )
          return reject(new HelmNotFoundError(helmPath));
        if (spawnError) return reject(spawnError);
        const stdout = out.join('\n');
        const stderr = err.join('\n');
        if (code === 0) return resolve({ stdout, stderr });
        reject(new HelmError(args, code ?? (signal ? 128 : 1), stderr || stdout));
      });
    });
  });
}

/** A release as `helm status` and `helm get metadata` describe it. */
export interface HelmRelease {
  name: string;
  namespace: string;
  revision: number;
  /** deployed | failed | pending-install | pending-upgrade | uninstalling | ... */
  status: string;
  /** The chart's name, e.g. `skein`. */
  chart?: string;
  chartVersion?: string;
  appVersion?: string;
  /** The chart's rendered NOTES.txt. */
  notes?: string;
}

export interface UpgradeInstallOptions extends HelmContext {
  release: string;
  namespace: string;
  /** Chart directory or reference (default: this installation's charts/skein). */
  chart?: string;
  /** Values, passed to helm as a values file (no --set escaping pitfalls). */
  values?: Record<string, unknown>;
  /** More values files, before `values` (which wins). */
  valuesFiles?: readonly string[];
  /** --create-namespace (default true). */
  createNamespace?: boolean;
  /**
   * --skip-crds (default false). `skein install` applies the CRDs itself first
   * (applyCrds in crds.ts), because Helm installs crds/ only once and never upgrades them.
   */
  skipCrds?: boolean;
  /** --wait for the objects to be ready (default false: use waitForController for progress). */
  wait?: boolean;
  /** --timeout for helm's own waits, a Go duration (default helm's 5m0s). */
  timeout?: string;
  /** --reset-values instead of helm's default reuse-or-reset behaviour. */
  resetValues?: boolean;
}

/**
 * `helm upgrade --install`: installs the release or upgrades it to this chart
 * and these values; resolves with the release's status afterwards.
 */
export async function helmUpgradeInstall(o: UpgradeInstallOptions): Promise<HelmRelease> {
  const dir = await mkdtemp(path.join(tmpdir(), 'skein-helm-'));
  try {
    const args = [
      'upgrade',
      '--install',
      o.release,
      o.chart ?? defaultChartPath(),
      '--namespace',
      o.namespace,
    ];
    if (o.createNamespace ?? true) args.push('--create-namespace');
    if (o.skipCrds) args.push('--skip-crds');
    if (o.wait) args.push('--wait');
    if (o.timeout) args.push('--timeout', o.timeout);
    if (o.resetValues) args.push('--reset-values');
    for (const f of o.valuesFiles ?? []) args.push('--values', f);
    if (o.values) {
      // JSON is YAML; mode 0600: values may hold image pull credentials.
      const file = path.join(dir, 'values.json');
      await writeFile(file, JSON.stringify(o.values), { mode: 0o600 });
      args.push('--values', file);
    }
    await runHelm(args, o);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  const status = await helmStatus({ ...o, onLine: undefined });
  if (!status) throw new Error(`helm reported success but release ${o.namespace}/${o.release} is not found`);
  return status;
}

export interface ReleaseRef extends HelmContext {
  release: string;
  namespace: string;
}

const NOT_FOUND = /release: not found|not found/i;

/**
 * The release's state (`helm status` for its notes, `helm get metadata` for
 * the chart); undefined when there is no such release.
 */
export async function helmStatus(o: ReleaseRef): Promise<HelmRelease | undefined> {
  const ref = [o.release, '--namespace', o.namespace, '--output', 'json'];
  let status: string;
  let metadata: string;
  try {
    ({ stdout: status } = await runHelm(['status', ...ref], o));
    ({ stdout: metadata } = await runHelm(['get', 'metadata', ...ref], o));
  } catch (err) {
    if (err instanceof HelmError && NOT_FOUND.test(err.stderr)) return undefined;
    throw err;
  }
  return parseRelease(status, metadata);
}

export interface UninstallOptions extends ReleaseRef {
  /** --wait until every deleted object is gone. */
  wait?: boolean;
  timeout?: string;
}

/**
 * `helm uninstall`: deletes every object of the release (not the CRDs, not the
 * Secrets the controller created at run time). Resolves false when there was
 * no such release.
 */
export async function helmUninstall(o: UninstallOptions): Promise<boolean> {
  const args = ['uninstall', o.release, '--namespace', o.namespace];
  if (o.wait) args.push('--wait');
  if (o.timeout) args.push('--timeout', o.timeout);
  try {
    await runHelm(args, o);
    return true;
  } catch (err) {
    if (err instanceof HelmError && NOT_FOUND.test(err.stderr)) return false;
    throw err;
  }
}

/** The rendered manifests of a release (`helm get manifest`), for checks and tests. */
export async function helmManifest(o: ReleaseRef): Promise<string> {
  return (await runHelm(['get', 'manifest', o.release, '--namespace', o.namespace], o)).stdout;
}

function parseJson(what: string, json: string): Record<string, unknown> {
  const v: unknown = JSON.parse(json);
  if (!isRecord(v)) throw new Error(`helm ${what}: not a JSON object`);
  return v;
}

function parseRelease(statusJson: string, metadataJson: string): HelmRelease {
  const status = parseJson('status', statusJson);
  const meta = parseJson('get metadata', metadataJson);
  const info = isRecord(status['info']) ? status['info'] : {};
  const str = (x: unknown): string | undefined => (typeof x === 'string' ? x : undefined);
  const release: HelmRelease = {
    name: str(meta['name']) ?? '',
    namespace: str(meta['namespace']) ?? '',
    revision: typeof meta['revision'] === 'number' ? meta['revision'] : 0,
    status: str(meta['status']) ?? str(info['status']) ?? 'unknown',
  };
  const chart = str(meta['chart']);
  const chartVersion = str(meta['version']);
  const appVersion = str(meta['appVersion']);
  const notes = str(info['notes']);
  if (chart) release.chart = chart;
  if (chartVersion) release.chartVersion = chartVersion;
  if (appVersion) release.appVersion = appVersion;
  if (notes) release.notes = notes;
  return release;
}
