import { Ajv, type ValidateFunction } from 'ajv';
import type { AnyObject } from '../model/objects.js';
import { CORE_KINDS, metadataSchema } from './core.js';
import { type CrdVersion, loadCrdVersions } from './crds.js';
import { describeErrors } from './errors.js';
import { isRecord } from './guards.js';
import { toAjvSchema } from './openapi.js';

/**
 * What to do with fields a CRD schema does not declare: 'reject' reports them
 * (kubectl's default strict validation; catches typos in local manifests),
 * 'prune' drops them silently (what the apiserver stores). Core kinds always
 * prune: we read only a few fields of objects that carry many more.
 */
export type UnknownFields = 'reject' | 'prune';

export interface ValidateOptions {
  unknownFields?: UnknownFields;
}

export type ValidationResult = { ok: true; object: AnyObject } | { ok: false; reason: string };

/** An (apiVersion, kind) pair skein can validate. */
export interface SupportedType {
  apiVersion: string;
  kind: string;
  namespaced: boolean;
  /** 'core' for built-in schemas, else the CRD file. */
  source: string;
}

interface TypeEntry extends SupportedType {
  schema: Record<string, unknown>;
  alwaysPrune: boolean;
}

// Picked before validation: Kubernetes objects carry many more metadata fields
// (managedFields, creationTimestamp, ...) that skein neither needs nor checks.
const METADATA_FIELDS = [
  'name',
  'namespace',
  'labels',
  'annotations',
  'uid',
  'resourceVersion',
  'generation',
];

function fullSchema(
  apiVersion: string,
  kind: string,
  fields: Record<string, unknown>,
  required: string[],
): Record<string, unknown> {
  return {
    type: 'object',
    required: ['apiVersion', 'kind', 'metadata', ...required],
    properties: {
      ...fields,
      apiVersion: { const: apiVersion },
      kind: { const: kind },
      // Namespace names are DNS labels; other names DNS subdomains.
      metadata: metadataSchema(kind === 'Namespace'),
    },
    additionalProperties: false,
  };
}

function crdEntry(v: CrdVersion): TypeEntry {
  const converted = toAjvSchema(v.schema);
  const props = isRecord(converted) && isRecord(converted['properties']) ? converted['properties'] : {};
  const required = isRecord(converted) && Array.isArray(converted['required']) ? converted['required'] : [];
  const { apiVersion: _a, kind: _k, metadata: _m, ...fields } = props;
  const req = required.filter(
    (r): r is string => typeof r === 'string' && !['apiVersion', 'kind', 'metadata'].includes(r),
  );
  return {
    apiVersion: v.apiVersion,
    kind: v.kind,
    namespaced: v.namespaced,
    source: v.file,
    schema: fullSchema(v.apiVersion, v.kind, fields, req),
    alwaysPrune: false,
  };
}

let entries: Map<string, TypeEntry> | undefined;

function typeTable(): Map<string, TypeEntry> {
  if (entries) return entries;
  const table = new Map<string, TypeEntry>();
  for (const c of CORE_KINDS) {
    table.set(`${c.apiVersion}|${c.kind}`, {
      apiVersion: c.apiVersion,
      kind: c.kind,
      namespaced: c.namespaced,
      source: 'core',
      schema: fullSchema(c.apiVersion, c.kind, c.fields, c.required),
      alwaysPrune: true,
    });
  }
  for (const v of loadCrdVersions()) table.set(`${v.apiVersion}|${v.kind}`, crdEntry(v));
  entries = table;
  return table;
}

/** Every (apiVersion, kind) `validateObject` accepts. */
export function supportedTypes(): SupportedType[] {
  return [...typeTable().values()].map(({ apiVersion, kind, namespaced, source }) => ({
    apiVersion,
    kind,
    namespaced,
    source,
  }));
}

/** Whether objects of this kind live in a namespace (false for Namespace, and unknown kinds). */
export function isNamespacedKind(kind: string): boolean {
  for (const e of typeTable().values()) if (e.kind === kind) return e.namespaced;
  return false;
}

// Formats such as "int32" appear in CRDs; ajv would need plugins to check them and
// the apiserver does not enforce most of them either.
const common = { strict: false, allErrors: true, validateFormats: false, useDefaults: true } as const;
const strictAjv = new Ajv({ ...common });
// removeAdditional: true drops only fields under `additionalProperties: false`,
// so string maps (labels, selectors) survive.
const pruningAjv = new Ajv({ ...common, removeAdditional: true });
const compiled = new Map<string, ValidateFunction<AnyObject>>();

function validatorFor(entry: TypeEntry, mode: UnknownFields): ValidateFunction<AnyObject> {
  const prune = entry.alwaysPrune || mode === 'prune';
  const key = `${entry.apiVersion}|${entry.kind}|${prune ? 'prune' : 'reject'}`;
  let fn = compiled.get(key);
  if (!fn) {
    fn = (prune ? pruningAjv : strictAjv).compile<AnyObject>(entry.schema);
    compiled.set(key, fn);
  }
  return fn;
}

/**
 * Drops object fields whose value is null, in place. The API server encodes a
 * Go nil slice or map without omitempty as null (an EndpointSlice with no
 * endpoints has `"endpoints": null`), and YAML's `key:` with nothing after it
 * is null too; both mean "not set", as Go's decoder reads them.
 */
function withoutNulls(v: unknown): unknown {
  if (Array.isArray(v)) for (const item of v) withoutNulls(item);
  else if (isRecord(v))
    for (const [k, field] of Object.entries(v)) {
      if (field === null) delete v[k];
      else withoutNulls(field);
    }
  return v;
}

/**
 * Checks one manifest or API object against skein's schemas: the CRDs in
 * charts/skein/crds for SMI and MeshConfig, built-in schemas for core kinds.
 * Returns a copy (the input is never changed) holding only the fields skein
 * models, or a reason naming the offending fields.
 */
export function validateObject(obj: unknown, options: ValidateOptions = {}): ValidationResult {
  if (!isRecord(obj)) return { ok: false, reason: 'not an object' };
  const { apiVersion, kind, metadata } = obj;
  if (typeof kind !== 'string' || kind === '')
    return { ok: false, reason: 'kind: required field is missing' };
  if (typeof apiVersion !== 'string' || apiVersion === '')
    return { ok: false, reason: 'apiVersion: required field is missing' };
  const table = typeTable();
  const entry = table.get(`${apiVersion}|${kind}`);
  if (!entry) {
    const versions = [...table.values()].filter((e) => e.kind === kind).map((e) => e.apiVersion);
    if (versions.length === 0) {
      const kinds = [...new Set([...table.values()].map((e) => e.kind))].join(', ');
      return { ok: false, reason: `unknown kind ${JSON.stringify(kind)} (skein reads: ${kinds})` };
    }
    return {
      ok: false,
      reason: `unsupported apiVersion ${JSON.stringify(apiVersion)} for kind ${kind} (supported: ${versions.join(', ')})`,
    };
  }
  if (!isRecord(metadata)) return { ok: false, reason: 'metadata: must be object' };
  const picked: Record<string, unknown> = {};
  for (const f of METADATA_FIELDS) if (metadata[f] !== undefined) picked[f] = metadata[f];
  // The apiserver ignores a namespace on cluster-scoped objects; so do we.
  if (!entry.namespaced) delete picked['namespace'];
  let candidate: unknown;
  try {
    candidate = withoutNulls(structuredClone({ ...obj, metadata: picked }));
  } catch (err) {
    return { ok: false, reason: `not plain data: ${err instanceof Error ? err.message : String(err)}` };
  }
  const validate = validatorFor(entry, options.unknownFields ?? 'reject');
  if (validate(candidate)) return { ok: true, object: candidate };
  return { ok: false, reason: describeErrors(validate.errors ?? []) };
}
