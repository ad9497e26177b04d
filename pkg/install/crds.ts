// Applies skein's CustomResourceDefinitions (charts/skein/crds) to a cluster.
//
// Helm creates a chart's crds/ on first install only and never upgrades or
// deletes them (helm.sh "CRD best practices"), so a newer skein would run
// against older schemas. `skein install` therefore applies them itself on every
// run, before `helm upgrade --install --skip-crds`: server-side apply with one
// field manager and force, so repeated runs converge and an unchanged CRD is
// not even rewritten.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { KubeApiError, KubeClient } from '../registry/kube/client.js';
import { crdDirectory } from '../schema/crds.js';
import { isRecord } from '../schema/guards.js';

const CRD_PATH = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';

/** The field manager skein applies with (shows in managedFields). */
export const FIELD_MANAGER = 'skein';

/** One CRD document from a chart's crds/ directory. */
export interface CrdManifest {
  /** metadata.name, e.g. `meshconfigs.config.skein.dev`. */
  name: string;
  file: string;
  /** The document as parsed (sent as-is: no client model drops `x-kubernetes-*` keys). */
  body: Record<string, unknown>;
}

/** What applying one CRD did, in kubectl's words. */
export type CrdApplyResult = 'created' | 'configured' | 'unchanged';

export interface AppliedCrd {
  name: string;
  file: string;
  result: CrdApplyResult;
  /** metadata.generation after the apply (grows when the spec changed). */
  generation: number;
}

export interface ApplyCrdsOptions {
  /** Directory of CRD YAML files (default: charts/skein/crds of this installation). */
  dir?: string;
  /** Server-side apply field manager (default `skein`). */
  fieldManager?: string;
  /** How long each CRD may take to become Established (default 60 s). */
  establishTimeoutMs?: number;
  /** One human-readable line per step, e.g. `customresourcedefinition x.y configured`. */
  onProgress?: (line: string) => void;
  signal?: AbortSignal;
}

/** Reads every CRD document of every *.yaml / *.yml file in `dir`, sorted by file name. */
export function loadCrdManifests(dir: string = crdDirectory()): CrdManifest[] {
  const out: CrdManifest[] = [];
  const files = readdirSync(dir)
    .filter((f) => /\.ya?ml$/.test(f))
    .sort();
  for (const name of files) {
    const file = path.join(dir, name);
    for (const doc of parseAllDocuments(readFileSync(file, 'utf8'))) {
      if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors[0]?.message}`);
      const body: unknown = doc.toJSON();
      if (body === null || body === undefined) continue; // an empty document (a trailing ---)
      if (
        !isRecord(body) ||
        body['apiVersion'] !== 'apiextensions.k8s.io/v1' ||
        body['kind'] !== 'CustomResourceDefinition'
      )
        throw new Error(`${file}: not an apiextensions.k8s.io/v1 CustomResourceDefinition`);
      const metadata = body['metadata'];
      const crdName = isRecord(metadata) ? metadata['name'] : undefined;
      if (typeof crdName !== 'string' || crdName === '')
        throw new Error(`${file}: CRD without metadata.name`);
      out.push({ name: crdName, file, body });
    }
  }
  if (out.length === 0) throw new Error(`${dir}: no CustomResourceDefinitions found`);
  return out;
}

/**
 * Server-side applies every CRD in `options.dir` (default skein's) with field
 * manager `skein` and force (taking over fields another manager, e.g. Helm's
 * first install, set), then waits until each is Established. Idempotent: an
 * unchanged CRD is left untouched (same resourceVersion). Rejects with the
 * API server's message when a CRD is refused or does not become Established.
 */
export async function applyCrds(
  kubeConfig: KubeConfig,
  options: ApplyCrdsOptions = {},
): Promise<AppliedCrd[]> {
  const client = new KubeClient({ kubeConfig });
  const manifests = loadCrdManifests(options.dir);
  const fieldManager = options.fieldManager ?? FIELD_MANAGER;
  const out: AppliedCrd[] = [];
  for (const m of manifests) {
    const url = `${CRD_PATH}/${encodeURIComponent(m.name)}`;
    const before = await getOrUndefined(client, url, options.signal);
    let applied: unknown;
    try {
      applied = await client.request('PATCH', url, {
        query: { fieldManager, force: true },
        // JSON is YAML: the apply content type takes it as-is.
        contentType: 'application/apply-patch+yaml',
        body: m.body,
        ...(options.signal ? { signal: options.signal } : {}),
      });
    } catch (err) {
      throw new Error(
        `applying CRD ${m.name} (${m.file}): ${err instanceof Error ? err.message : String(err)}`,
      );
    }
    const result: CrdApplyResult =
      before === undefined
        ? 'created'
        : resourceVersionOf(before) === resourceVersionOf(applied)
          ? 'unchanged'
          : 'configured';
    options.onProgress?.(`customresourcedefinition ${m.name} ${result}`);
    const established = await waitEstablished(client, m.name, options);
    out.push({ name: m.name, file: m.file, result, generation: generationOf(established) });
  }
  return out;
}

export interface DeleteCrdsOptions {
  dir?: string;
  onProgress?: (line: string) => void;
  signal?: AbortSignal;
}

/**
 * Deletes every CRD in `options.dir` (default skein's) — and with them every
 * custom resource of those kinds in the cluster. For `skein uninstall` when the
 * user asks for it explicitly; Helm never does this. Returns the names that
 * existed; missing ones are fine.
 */
export async function deleteCrds(kubeConfig: KubeConfig, options: DeleteCrdsOptions = {}): Promise<string[]> {
  const client = new KubeClient({ kubeConfig });
  const deleted: string[] = [];
  for (const m of loadCrdManifests(options.dir)) {
    try {
      await client.request('DELETE', `${CRD_PATH}/${encodeURIComponent(m.name)}`, {
        ...(options.signal ? { signal: options.signal } : {}),
      });
      deleted.push(m.name);
      options.onProgress?.(`customresourcedefinition ${m.name} deleted`);
    } catch (err) {
      if (!(err instanceof KubeApiError && err.status === 404)) throw err;
    }
  }
  return deleted;
}

async function getOrUndefined(client: KubeClient, url: string, signal?: AbortSignal): Promise<unknown> {
  try {
    return await client.request('GET', url, signal ? { signal } : {});
  } catch (err) {
    if (err instanceof KubeApiError && err.status === 404) return undefined;
    throw err;
  }
}

function metadataField(obj: unknown, key: string): unknown {
  const metadata = isRecord(obj) ? obj['metadata'] : undefined;
  return isRecord(metadata) ? metadata[key] : undefined;
}

function resourceVersionOf(obj: unknown): string | undefined {
  const rv = metadataField(obj, 'resourceVersion');
  return typeof rv === 'string' ? rv : undefined;
}

function generationOf(obj: unknown): number {
  const g = metadataField(obj, 'generation');
  return typeof g === 'number' ? g : 0;
}

interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  observedGeneration?: number;
}

function conditionsOf(obj: unknown): Condition[] {
  const status = isRecord(obj) ? obj['status'] : undefined;
  const list = isRecord(status) ? status['conditions'] : undefined;
  if (!Array.isArray(list)) return [];
  const out: Condition[] = [];
  for (const c of list) {
    if (!isRecord(c) || typeof c['type'] !== 'string' || typeof c['status'] !== 'string') continue;
    out.push({
      type: c['type'],
      status: c['status'],
      ...(typeof c['reason'] === 'string' ? { reason: c['reason'] } : {}),
      ...(typeof c['message'] === 'string' ? { message: c['message'] } : {}),
      ...(typeof c['observedGeneration'] === 'number' ? { observedGeneration: c['observedGeneration'] } : {}),
    });
  }
  return out;
}

/**
 * Polls until the CRD is Established for its current generation (its kinds are
 * served). NamesAccepted=False (a plural or kind another CRD owns) never heals
 * by itself: fail at once with the API server's reason.
 */
async function waitEstablished(
  client: KubeClient,
  name: string,
  options: ApplyCrdsOptions,
): Promise<unknown> {
  const timeoutMs = options.establishTimeoutMs ?? 60_000;
  const deadline = Date.now() + timeoutMs;
  const url = `${CRD_PATH}/${encodeURIComponent(name)}`;
  let last: Condition[] = [];
  for (;;) {
    const crd = await client.request('GET', url, options.signal ? { signal: options.signal } : {});
    const generation = generationOf(crd);
    last = conditionsOf(crd);
    const current = (c: Condition) =>
      c.observedGeneration === undefined || c.observedGeneration >= generation;
    const names = last.find((c) => c.type === 'NamesAccepted');
    if (names?.status === 'False' && current(names))
      throw new Error(
        `CRD ${name}: names not accepted: ${names.message ?? names.reason ?? 'no reason given'}`,
      );
    if (last.some((c) => c.type === 'Established' && c.status === 'True' && current(c))) return crd;
    if (Date.now() > deadline) {
      const seen = last.map((c) => `${c.type}=${c.status}${c.message ? ` (${c.message})` : ''}`).join(', ');
      throw new Error(`CRD ${name} not Established after ${timeoutMs} ms; conditions: ${seen || 'none'}`);
    }
    options.signal?.throwIfAborted();
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
