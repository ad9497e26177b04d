import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { isRecord } from './guards.js';

/** One served version of a CustomResourceDefinition, with its OpenAPI v3 schema. */
export interface CrdVersion {
  group: string;
  version: string;
  /** `<group>/<version>` */
  apiVersion: string;
  kind: string;
  namespaced: boolean;
  /** `spec.versions[].schema.openAPIV3Schema`, as written in the CRD. */
  schema: Record<string, unknown>;
  /** The CRD file it came from. */
  file: string;
}

const here = path.dirname(fileURLToPath(import.meta.url));

/**
 * The directory holding skein's CRDs (charts/skein/crds). Found by walking up from
 * this module, so it works from dist/pkg/schema and from the source tree alike.
 */
export function crdDirectory(): string {
  for (let dir = here; dir !== path.dirname(dir); dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'charts', 'skein', 'crds');
    if (existsSync(candidate)) return candidate;
  }
  throw new Error('charts/skein/crds not found above ' + here);
}

/** Reads every served version of every CRD file in `dir` (default: skein's chart). */
export function loadCrdVersions(dir: string = crdDirectory()): CrdVersion[] {
  const out: CrdVersion[] = [];
  const files = readdirSync(dir)
    .filter((f) => /\.ya?ml$/.test(f))
    .sort();
  for (const name of files) {
    const file = path.join(dir, name);
    out.push(...crdVersionsOf(parse(readFileSync(file, 'utf8')), file));
  }
  return out;
}

/** Extracts the served versions of one parsed CRD document; throws on a malformed CRD. */
export function crdVersionsOf(doc: unknown, file: string): CrdVersion[] {
  const fail = (what: string): never => {
    throw new Error(`${file}: not a valid apiextensions.k8s.io/v1 CustomResourceDefinition: ${what}`);
  };
  if (!isRecord(doc) || doc['kind'] !== 'CustomResourceDefinition') return fail('kind');
  if (doc['apiVersion'] !== 'apiextensions.k8s.io/v1') return fail('apiVersion');
  const spec = doc['spec'];
  if (!isRecord(spec)) return fail('spec');
  const group = spec['group'];
  const names = spec['names'];
  const versions = spec['versions'];
  if (typeof group !== 'string') return fail('spec.group');
  if (!isRecord(names) || typeof names['kind'] !== 'string') return fail('spec.names.kind');
  if (!Array.isArray(versions)) return fail('spec.versions');
  const kind = names['kind'];
  const namespaced = spec['scope'] === 'Namespaced';
  const out: CrdVersion[] = [];
  for (const v of versions) {
    if (!isRecord(v) || typeof v['name'] !== 'string') return fail('spec.versions[].name');
    if (v['served'] !== true) continue;
    const schema = isRecord(v['schema']) ? v['schema']['openAPIV3Schema'] : undefined;
    if (!isRecord(schema)) return fail(`spec.versions[${v['name']}].schema.openAPIV3Schema`);
    out.push({
      group,
      version: v['name'],
      apiVersion: `${group}/${v['name']}`,
      kind,
      namespaced,
      schema,
      file,
    });
  }
  return out;
}
