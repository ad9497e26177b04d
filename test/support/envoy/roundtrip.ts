// Test helper: proves a resource survives the real Envoy protos unchanged.
// protobufjs `fromObject` silently drops misspelled fields and turns an Any
// with an unknown `@type` into an empty Any (protobufjs `Type.fromObject` behaviour), so the
// input is first walked against the schema (unknown fields, unknown `@type`,
// bad enum values, two members of one oneof, a subset of Envoy's PGV rules),
// then encoded with skein's encoder, decoded with the types parsed from the
// .proto files (not the runtime descriptor), and compared after normalising.
import { isDeepStrictEqual } from 'node:util';
import protobuf from 'protobufjs';
import type { ProtoObject, Resource } from '../../../pkg/envoy/types.js';
import { encodeMessage } from '../../../pkg/xds/proto/codec.js';
import { encodeDirect } from '../../../pkg/xds/proto/direct-encode.js';
import { envoyRoot } from '../../../pkg/xds/proto/root.js';
import { decodeParsed, parsedType } from './proto-types.js';

type Normal = string | number | boolean | Normal[] | { [k: string]: Normal };

const ANY = '.google.protobuf.Any';
const INT64 = new Set(['int64', 'uint64', 'sint64', 'fixed64', 'sfixed64']);
const NUMBER = new Set(['int32', 'uint32', 'sint32', 'fixed32', 'sfixed32', 'double', 'float']);

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);
}

class Walker {
  readonly problems: string[] = [];
  constructor(private readonly checkRules: boolean) {}

  message(type: protobuf.Type, value: unknown, path: string): { [k: string]: Normal } {
    if (!isRecord(value)) {
      this.problems.push(`${path}: expected a ${type.fullName} object`);
      return {};
    }
    if (type.fullName === ANY) return this.any(value, path);
    const out: { [k: string]: Normal } = {};
    for (const [key, v] of Object.entries(value)) {
      if (v === undefined || v === null) continue;
      const field = type.fields[key];
      if (!field) {
        this.problems.push(`${path}.${key}: no such field in ${type.fullName}`);
        continue;
      }
      const n = this.field(field, v, `${path}.${key}`);
      if (n !== undefined) out[key] = n;
    }
    for (const oneof of type.oneofsArray) {
      const set = oneof.oneof.filter((name) => value[name] !== undefined && value[name] !== null);
      if (set.length > 1) this.problems.push(`${path}: oneof ${oneof.name} has ${set.join(' and ')}`);
      if (this.checkRules && set.length === 0 && oneof.options?.['(validate.required)'] === true) {
        this.problems.push(`${path}: oneof ${oneof.name} is required (PGV)`);
      }
    }
    if (this.checkRules) for (const field of type.fieldsArray) this.rules(field, value[field.name], path);
    return out;
  }

  private any(value: Record<string, unknown>, path: string): { [k: string]: Normal } {
    const url = value['@type'];
    if (typeof url !== 'string') {
      this.problems.push(`${path}: Any without @type`);
      return {};
    }
    if (!url.startsWith('type.googleapis.com/')) this.problems.push(`${path}: @type ${url} lacks the prefix`);
    let inner: protobuf.Type;
    try {
      inner = parsedType(url);
    } catch {
      this.problems.push(`${path}: unknown @type ${url}`);
      return {};
    }
    const { '@type': _ignored, ...body } = value;
    return { '@type': url, ...this.message(inner, body, `${path}<${inner.name}>`) };
  }

  private field(field: protobuf.Field, v: unknown, path: string): Normal | undefined {
    field.resolve();
    if (field instanceof protobuf.MapField) {
      if (!isRecord(v)) return this.bad(path, 'expected a map object');
      const out: { [k: string]: Normal } = {};
      for (const [k, item] of Object.entries(v)) {
        const n = this.single(field, item, `${path}[${k}]`, true);
        if (n !== undefined) out[k] = n;
      }
      return Object.keys(out).length > 0 ? out : undefined;
    }
    if (field.repeated) {
      if (!Array.isArray(v)) return this.bad(path, 'expected an array');
      const out: Normal[] = [];
      v.forEach((item, i) => {
        // Repeated scalars keep their defaults: position matters.
        out.push(this.single(field, item, `${path}[${i}]`, true) ?? defaultOf(field));
      });
      return out.length > 0 ? out : undefined;
    }
    // Singular scalars at their default are indistinguishable from unset in
    // proto3, except as a oneof member (which records presence).
    return this.single(field, v, path, field.partOf !== null && field.partOf !== undefined);
  }

  private single(field: protobuf.Field, v: unknown, path: string, keepDefault: boolean): Normal | undefined {
    const rt = field.resolvedType;
    if (rt instanceof protobuf.Type) return this.message(rt, v, path);
    if (rt instanceof protobuf.Enum) {
      const name =
        typeof v === 'number' ? rt.valuesById[v] : typeof v === 'string' && v in rt.values ? v : undefined;
      if (name === undefined) return this.bad(path, `${String(v)} is not a value of ${rt.fullName}`);
      return !keepDefault && rt.values[name] === 0 ? undefined : name;
    }
    const t = field.type;
    let n: Normal;
    if (t === 'string') {
      if (typeof v !== 'string') return this.bad(path, 'expected a string');
      n = v;
    } else if (t === 'bool') {
      if (typeof v !== 'boolean') return this.bad(path, 'expected a boolean');
      n = v;
    } else if (NUMBER.has(t)) {
      if (typeof v !== 'number') return this.bad(path, 'expected a number');
      n = v;
    } else if (INT64.has(t)) {
      const num = typeof v === 'number' ? v : typeof v === 'string' ? Number(v) : Number.NaN;
      if (!Number.isSafeInteger(num)) return this.bad(path, 'expected a 64-bit integer');
      n = num;
    } else if (t === 'bytes') {
      if (v instanceof Uint8Array) n = Buffer.from(v).toString('base64');
      else if (typeof v === 'string') n = v;
      else return this.bad(path, 'expected bytes');
    } else {
      return this.bad(path, `unsupported scalar type ${t}`);
    }
    return !keepDefault && isDefault(n) ? undefined : n;
  }

  /** The PGV (protoc-gen-validate) rules Envoy enforces and skein's output can break. */
  private rules(field: protobuf.Field, v: unknown, path: string): void {
    const o = field.options;
    if (!o) return;
    const p = `${path}.${field.name}`;
    const present = v !== undefined && v !== null;
    const inOneof = field.partOf !== null && field.partOf !== undefined;
    const r = (k: string): unknown => o[`(validate.rules).${k}`];
    const fail = (why: string): void => {
      this.problems.push(`${p}: ${why} (PGV)`);
    };
    // A oneof member's rules apply only when it is the member set.
    if (!present && inOneof) return;
    if (!present && (r('message.required') || r('any.required') || r('duration.required'))) fail('required');
    if (Array.isArray(v) || (!present && field.repeated)) {
      const count = Array.isArray(v) ? v.length : 0;
      const min = r('repeated.min_items');
      const max = r('repeated.max_items');
      if (typeof min === 'number' && count < min) fail(`needs at least ${min} items`);
      if (typeof max === 'number' && count > max) fail(`allows at most ${max} items`);
      const itemMin = r('repeated.items.string.min_len');
      if (typeof itemMin === 'number' && Array.isArray(v)) {
        for (const item of v) if (typeof item === 'string' && item.length < itemMin) fail('item too short');
      }
      return;
    }
    if (isRecord(v) && field instanceof protobuf.MapField) {
      const min = r('map.min_pairs');
      if (typeof min === 'number' && Object.keys(v).length < min) fail(`needs at least ${min} entries`);
      return;
    }
    if (field.type === 'string' && (present || !inOneof) && !r('string.ignore_empty')) {
      const s = typeof v === 'string' ? v : '';
      const min = r('string.min_len');
      if (typeof min === 'number' && s.length < min) fail(`shorter than ${min}`);
    }
    for (const kind of ['uint32', 'uint64', 'int32', 'int64', 'double']) {
      if (field.type !== kind || (!present && inOneof)) continue;
      const num = typeof v === 'number' ? v : Number(v ?? 0);
      const gt = r(`${kind}.gt`);
      const gte = r(`${kind}.gte`);
      const lt = r(`${kind}.lt`);
      const lte = r(`${kind}.lte`);
      if (typeof gt === 'number' && !(num > gt)) fail(`must be > ${gt}`);
      if (typeof gte === 'number' && !(num >= gte)) fail(`must be >= ${gte}`);
      if (typeof lt === 'number' && !(num < lt)) fail(`must be < ${lt}`);
      if (typeof lte === 'number' && !(num <= lte)) fail(`must be <= ${lte}`);
    }
  }

  private bad(path: string, why: string): undefined {
    this.problems.push(`${path}: ${why}`);
    return undefined;
  }
}

function isDefault(n: Normal): boolean {
  return n === '' || n === 0 || n === false;
}

function defaultOf(field: protobuf.Field): Normal {
  if (field.resolvedType instanceof protobuf.Type) return {};
  if (field.resolvedType instanceof protobuf.Enum) return field.resolvedType.valuesById[0] ?? 0;
  if (field.type === 'string' || field.type === 'bytes') return '';
  return field.type === 'bool' ? false : 0;
}

/** Normalises a message to a canonical form, collecting schema problems. */
export function normaliseMessage(
  typeUrl: string,
  message: unknown,
  checkRules = true,
): { normal: { [k: string]: Normal }; problems: string[] } {
  const walker = new Walker(checkRules);
  const normal = walker.message(parsedType(typeUrl), message, typeUrl.replace(/^.*\./, ''));
  return { normal, problems: walker.problems };
}

function member(n: Normal, key: string): Normal | undefined {
  if (Array.isArray(n)) return n[Number(key)];
  return typeof n === 'object' ? n[key] : undefined;
}

/** First path where two normal forms differ, for a readable failure. */
function firstDifference(a: Normal | undefined, b: Normal | undefined, path: string): string {
  if (isDeepStrictEqual(a, b)) return '';
  if (typeof a === 'object' && typeof b === 'object' && a !== null && b !== null) {
    if (Array.isArray(a) !== Array.isArray(b)) return path;
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    for (const k of keys) {
      const d = firstDifference(member(a, k), member(b, k), `${path}.${k}`);
      if (d) return d;
    }
  }
  return `${path} (sent ${JSON.stringify(a)}, decoded ${JSON.stringify(b)})`;
}

/**
 * skein's encoder with the runtime descriptor, as the controller encodes; what
 * skein only writes as a JSON file (the bootstrap) is not in that descriptor
 * and goes through the same encoder with the parsed types.
 */
function encode(typeUrl: string, message: ProtoObject): Uint8Array {
  const name = typeUrl.replace(/^type\.googleapis\.com\//, '');
  if (envoyRoot().lookup(name) !== null) return encodeMessage(typeUrl, message);
  return encodeDirect(parsedType(typeUrl), message);
}

/**
 * Every problem with one message: schema violations of the input, encoder
 * errors, and any difference after an encode/decode round trip.
 */
export function roundTripProblems(typeUrl: string, message: ProtoObject): string[] {
  const input = normaliseMessage(typeUrl, message);
  const problems = [...input.problems];
  let decoded: ProtoObject;
  try {
    decoded = decodeParsed(typeUrl, encode(typeUrl, message));
  } catch (err) {
    problems.push(`encode/decode failed: ${err instanceof Error ? err.message : String(err)}`);
    return problems;
  }
  const output = normaliseMessage(typeUrl, decoded, false);
  for (const p of output.problems) problems.push(`decoded: ${p}`);
  const diff = firstDifference(input.normal, output.normal, '');
  if (diff) problems.push(`round trip changed ${diff}`);
  return problems;
}

/** Round-trip problems of many resources, each prefixed with its name. */
export function resourceProblems(resources: readonly Resource[]): string[] {
  const problems: string[] = [];
  for (const r of resources)
    for (const p of roundTripProblems(r.typeUrl, r.message)) problems.push(`${r.name}: ${p}`);
  return problems;
}
