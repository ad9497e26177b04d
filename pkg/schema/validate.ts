import type { ErrorObject } from 'ajv';
import type { AnyObject } from '../model/objects.js';
import { describeErrors } from './errors.js';
import * as pruning from './generated/prune.js';
import * as rejecting from './generated/reject.js';
import { TYPES } from './generated/types.js';
import { isRecord } from './guards.js';
import type { GeneratedType, SupportedType } from './table.js';

export type { SupportedType } from './table.js';

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

// The table of generated/types.ts by `<apiVersion>|<kind>`, built on first use.
let entries: Map<string, GeneratedType> | undefined;

function typeTable(): Map<string, GeneratedType> {
  entries ??= new Map(TYPES.map((t) => [`${t.apiVersion}|${t.kind}`, t]));
  return entries;
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

/** A generated validator: true when valid; ajv's errors otherwise (https://ajv.js.org/api.html#validation-errors). */
type Validator = ((data: unknown) => boolean) & { errors?: ErrorObject[] | null };

// The generated modules export one validator per type (TYPES[].validator); the
// rejecting one only for CRD kinds, since core kinds always prune.
const pruningValidators = pruning as unknown as Record<string, Validator | undefined>;
const rejectingValidators = rejecting as unknown as Record<string, Validator | undefined>;

function validatorFor(entry: GeneratedType, mode: UnknownFields): Validator {
  const prune = entry.alwaysPrune || mode === 'prune';
  const fn = (prune ? pruningValidators : rejectingValidators)[entry.validator];
  // Unreachable while generated/ matches pkg/schema/generated.test.ts.
  if (!fn)
    throw new Error(
      `no generated validator for ${entry.apiVersion} ${entry.kind} (regenerate pkg/schema/generated)`,
    );
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
  if (validate(candidate)) return { ok: true, object: candidate as AnyObject };
  return { ok: false, reason: describeErrors(validate.errors ?? []) };
}
