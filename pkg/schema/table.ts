import { CORE_KINDS, metadataSchema } from './core.js';
import type { CrdVersion } from './crds.js';
import { isRecord } from './guards.js';
import { toAjvSchema } from './openapi.js';

/** An (apiVersion, kind) pair skein can validate. */
export interface SupportedType {
  apiVersion: string;
  kind: string;
  namespaced: boolean;
  /** 'core' for built-in schemas, else the CRD file (relative to the repository). */
  source: string;
}

/** A supported type with the JSON schema its objects are validated against. */
export interface TypeEntry extends SupportedType {
  schema: Record<string, unknown>;
  /** Core kinds always prune: we read only a few fields of objects that carry many more. */
  alwaysPrune: boolean;
}

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

function crdEntry(v: CrdVersion, source: string): TypeEntry {
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
    source,
    schema: fullSchema(v.apiVersion, v.kind, fields, req),
    alwaysPrune: false,
  };
}

/**
 * Every type skein validates: the core kinds (core.ts), then each served version
 * of the CRDs. `sourceOf` names a CRD's file in the table (codegen.ts makes it
 * relative to the repository).
 */
export function typeEntries(crds: readonly CrdVersion[], sourceOf: (file: string) => string): TypeEntry[] {
  return [
    ...CORE_KINDS.map((c) => ({
      apiVersion: c.apiVersion,
      kind: c.kind,
      namespaced: c.namespaced,
      source: 'core',
      schema: fullSchema(c.apiVersion, c.kind, c.fields, c.required),
      alwaysPrune: true,
    })),
    ...crds.map((v) => crdEntry(v, sourceOf(v.file))),
  ];
}

/** A row of the generated table (generated/types.ts): the entry without its schema, and its validator's export. */
export interface GeneratedType extends SupportedType {
  alwaysPrune: boolean;
  validator: string;
}
