// Reaching the Kubernetes API from the CLI: kubectl's kubeconfig lookup order
// (--kubeconfig, $KUBECONFIG, ~/.kube/config, in-cluster), --context, and API
// failures turned into messages that say where skein tried to go and why it failed.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeApiError, KubeClient, type RequestOptions } from '../registry/kube/client.js';
import { CliError, errorMessage } from './errors.js';
import type { ParsedFlags } from './spec.js';

export interface KubeSelection {
  kubeconfig?: string;
  context?: string;
  env: Record<string, string | undefined>;
}

export function kubeSelection(flags: ParsedFlags, env: Record<string, string | undefined>): KubeSelection {
  const kubeconfig = flags.string('kubeconfig');
  const context = flags.string('context');
  return {
    ...(kubeconfig !== undefined ? { kubeconfig } : {}),
    ...(context !== undefined ? { context } : {}),
    env,
  };
}

/** Loads the kubeconfig the way kubectl finds it, and selects the context. Throws CliError. */
export function loadKubeConfig(sel: KubeSelection): { kubeConfig: KubeConfig; source: string } {
  const kc = new KubeConfig();
  let source: string;
  try {
    if (sel.kubeconfig !== undefined) {
      if (!existsSync(sel.kubeconfig)) throw new CliError(`kubeconfig ${sel.kubeconfig}: no such file`);
      kc.loadFromFile(sel.kubeconfig);
      source = sel.kubeconfig;
    } else if (sel.env['KUBECONFIG']) {
      source = sel.env['KUBECONFIG'];
      const files = source.split(path.delimiter).filter(Boolean);
      const missing = files.filter((f) => !existsSync(f));
      if (missing.length === files.length) throw new CliError(`KUBECONFIG=${source}: no such file`);
      const first = files.find((f) => existsSync(f)) ?? '';
      kc.loadFromFile(first);
      for (const f of files.filter((f) => f !== first && existsSync(f))) {
        const more = new KubeConfig();
        more.loadFromFile(f);
        kc.mergeConfig(more);
      }
    } else if (sel.env['HOME'] && existsSync(path.join(sel.env['HOME'], '.kube', 'config'))) {
      source = path.join(sel.env['HOME'], '.kube', 'config');
      kc.loadFromFile(source);
    } else if (sel.env['KUBERNETES_SERVICE_HOST']) {
      kc.loadFromCluster();
      source = 'in-cluster service account';
    } else {
      throw new CliError(
        'no kubeconfig: pass --kubeconfig <file>, set KUBECONFIG, or create ~/.kube/config (or use --controller-url where a command offers it)',
      );
    }
  } catch (err) {
    if (err instanceof CliError) throw err;
    throw new CliError(`cannot load the kubeconfig: ${errorMessage(err)}`);
  }
  const contexts = kc.getContexts().map((c) => c.name);
  const known = contexts.length > 0 ? `its contexts: ${contexts.join(', ')}` : 'it defines no contexts';
  if (sel.context !== undefined) {
    if (!kc.getContextObject(sel.context))
      throw new CliError(`context "${sel.context}" not found in ${source} (${known})`);
    kc.setCurrentContext(sel.context);
  }
  if (source !== 'in-cluster service account') {
    const current = kc.getCurrentContext();
    if (!current || !kc.getContextObject(current))
      throw new CliError(`${source} has no current context: pass --context <name> (${known})`);
  }
  if (!kc.getCurrentCluster())
    throw new CliError(
      `context "${kc.getCurrentContext()}" in ${source} names no cluster that the file defines`,
    );
  return { kubeConfig: kc, source };
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The CLI's API client: KubeClient plus errors a person can act on. */
export class Kube {
  readonly client: KubeClient;
  readonly server: string;
  readonly context: string;

  constructor(
    readonly kubeConfig: KubeConfig,
    readonly source: string,
    requestTimeoutMs = 15_000,
  ) {
    this.client = new KubeClient({ kubeConfig, requestTimeoutMs });
    this.server = kubeConfig.getCurrentCluster()?.server ?? '';
    this.context = kubeConfig.getCurrentContext();
  }

  static open(sel: KubeSelection, requestTimeoutMs?: number): Kube {
    const { kubeConfig, source } = loadKubeConfig(sel);
    return new Kube(kubeConfig, source, requestTimeoutMs);
  }

  /** Where requests go, for messages: `https://host:6443 (context prod)`. */
  get where(): string {
    return `${this.server} (context ${this.context})`;
  }

  async request(method: string, apiPath: string, options: RequestOptions = {}): Promise<unknown> {
    try {
      return await this.client.request(method, apiPath, options);
    } catch (err) {
      throw this.explain(err);
    }
  }

  /** GET that answers undefined for 404 (a missing object, or a missing resource type). */
  async get(apiPath: string, query?: RequestOptions['query']): Promise<Record<string, unknown> | undefined> {
    try {
      const body = await this.client.request('GET', apiPath, query ? { query } : {});
      return isRecord(body) ? body : undefined;
    } catch (err) {
      if (err instanceof KubeApiError && err.status === 404) return undefined;
      throw this.explain(err);
    }
  }

  /** The items of a list; a resource type the server does not know (404) is an empty list. */
  async list(apiPath: string, query?: RequestOptions['query']): Promise<Record<string, unknown>[]> {
    const body = await this.get(apiPath, query);
    const items = body?.['items'];
    return Array.isArray(items) ? items.filter(isRecord) : [];
  }

  async mergePatch(apiPath: string, body: unknown): Promise<unknown> {
    return this.request('PATCH', apiPath, { body, contentType: 'application/merge-patch+json' });
  }

  /** An API failure as a CliError: unreachable, refused credentials, forbidden, or the server's own message. */
  explain(err: unknown): CliError {
    if (err instanceof CliError) return err;
    if (err instanceof KubeApiError) {
      if (err.status === 401)
        return new CliError(
          `the Kubernetes API at ${this.where} did not accept the credentials in ${this.source}: ${err.message}`,
        );
      if (err.status === 403)
        return new CliError(`the Kubernetes API at ${this.where} refused: ${err.message}`);
      return new CliError(`Kubernetes API at ${this.where}: ${err.message}`);
    }
    return new CliError(`cannot reach the Kubernetes API at ${this.where}: ${networkMessage(err)}`);
  }
}

/** Network errors carry their cause in `code`/`cause`; AbortSignal.timeout in a TimeoutError. */
function networkMessage(err: unknown): string {
  if (err instanceof Error) {
    if (err.name === 'TimeoutError' || err.name === 'AbortError') return 'no answer in time';
    const cause = err.cause instanceof Error ? `: ${err.cause.message}` : '';
    return `${err.message}${cause}`;
  }
  return String(err);
}

export function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

export function record(v: unknown): Record<string, unknown> {
  return isRecord(v) ? v : {};
}
