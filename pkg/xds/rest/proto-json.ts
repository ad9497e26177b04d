import protobuf from 'protobufjs';
import type { ProtoObject, ProtoValue } from '../../envoy/types.js';
import { messageType } from '../proto/root.js';

// Proto3 JSON (https://protobuf.dev/programming-guides/json/) of decoded
// messages, so a REST-JSON client such as Envoy's HTTP subscription (which
// parses with protobuf's JsonStringToMessage) accepts the response.
// protobufjs' own toObject is not proto3 JSON: it writes Durations as
// {seconds, nanos}, wrappers as {value}, Structs as their fields map.
// Field names stay as in the .proto (snake_case), which every proto3 JSON
// parser accepts, and which is how Envoy's documentation writes them.

const WRAPPERS = new Set([
  'google.protobuf.DoubleValue',
  'google.protobuf.FloatValue',
  'google.protobuf.Int64Value',
  'google.protobuf.UInt64Value',
  'google.protobuf.Int32Value',
  'google.protobuf.UInt32Value',
  'google.protobuf.BoolValue',
  'google.protobuf.StringValue',
  'google.protobuf.BytesValue',
]);

const LONG_TYPES = new Set(['int64', 'uint64', 'sint64', 'fixed64', 'sfixed64']);

type Decoded = { [field: string]: unknown };

function isDecoded(v: unknown): v is Decoded {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function fullName(type: protobuf.Type): string {
  return type.fullName.replace(/^\./, '');
}

/** A decimal string for a 64-bit value, whether protobufjs gave a Long or a number. */
function longString(v: unknown): string {
  if (typeof v === 'number' || typeof v === 'bigint') return String(v);
  // A Long (from long.js) prints its decimal value.
  return String(v);
}

function longNumber(v: unknown): number {
  return Number(longString(v));
}

function floatJson(v: number): ProtoValue {
  // Proto3 JSON spells the non-finite values as strings.
  if (Number.isNaN(v)) return 'NaN';
  if (v === Number.POSITIVE_INFINITY) return 'Infinity';
  if (v === Number.NEGATIVE_INFINITY) return '-Infinity';
  return v;
}

function bytesJson(v: unknown): string {
  return v instanceof Uint8Array ? Buffer.from(v).toString('base64') : '';
}

/** `1.5s`; fractions in 3, 6 or 9 digits as the spec prints them. */
export function durationJson(seconds: number, nanos: number): string {
  const negative = seconds < 0 || nanos < 0;
  const s = Math.abs(seconds);
  const n = Math.abs(nanos);
  let frac = '';
  if (n !== 0) {
    const digits = n.toString().padStart(9, '0');
    frac = digits.endsWith('000000')
      ? `.${digits.slice(0, 3)}`
      : digits.endsWith('000')
        ? `.${digits.slice(0, 6)}`
        : `.${digits}`;
  }
  return `${negative ? '-' : ''}${s}${frac}s`;
}

function timestampJson(seconds: number, nanos: number): string {
  const iso = new Date(seconds * 1000).toISOString(); // 2024-01-02T03:04:05.000Z
  const base = iso.slice(0, 19);
  if (nanos === 0) return `${base}Z`;
  const frac = durationJson(0, nanos).slice(1, -1); // ".5" style from the same rules
  return `${base}${frac}Z`;
}

function scalarJson(field: protobuf.Field, v: unknown): ProtoValue {
  const resolved = field.resolvedType;
  if (resolved instanceof protobuf.Enum) {
    // An enum value this build does not know stays numeric (proto3 JSON allows it).
    const n = typeof v === 'number' ? v : Number(v);
    return resolved.valuesById[n] ?? n;
  }
  if (resolved instanceof protobuf.Type) return messageJson(resolved, v);
  if (LONG_TYPES.has(field.type)) return longString(v);
  if (field.type === 'bytes') return bytesJson(v);
  if (field.type === 'double' || field.type === 'float')
    return floatJson(typeof v === 'number' ? v : Number(v));
  if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') return v;
  return null;
}

function mapKeyJson(key: string): string {
  return key; // protobufjs already keys maps by the key's string form (64-bit keys as decimal)
}

/** A decoded message (protobufjs Message instance) as proto3 JSON. */
export function messageJson(type: protobuf.Type, message: unknown): ProtoValue {
  if (!isDecoded(message)) return null;
  const name = fullName(type);
  const special = wellKnownJson(name, type, message);
  if (special !== undefined) return special;
  const out: ProtoObject = {};
  for (const field of type.fieldsArray) {
    // protobufjs keeps unset fields on the prototype (defaults) and sets own
    // properties for what was on the wire; repeated and map fields always exist.
    if (!Object.hasOwn(message, field.name)) continue;
    const v = message[field.name];
    if (v === null || v === undefined) continue;
    if (field instanceof protobuf.MapField) {
      if (!isDecoded(v)) continue;
      const keys = Object.keys(v);
      if (keys.length === 0) continue;
      const m: ProtoObject = {};
      for (const k of keys) m[mapKeyJson(k)] = scalarJson(field, v[k]);
      out[field.name] = m;
    } else if (field.repeated) {
      if (!Array.isArray(v) || v.length === 0) continue;
      out[field.name] = v.map((item: unknown) => scalarJson(field, item));
    } else {
      out[field.name] = scalarJson(field, v);
    }
  }
  return out;
}

function wellKnownJson(name: string, type: protobuf.Type, m: Decoded): ProtoValue | undefined {
  switch (name) {
    case 'google.protobuf.Any':
      return anyJson(typeof m['type_url'] === 'string' ? m['type_url'] : '', m['value']);
    case 'google.protobuf.Duration':
      return durationJson(longNumber(m['seconds'] ?? 0), Number(m['nanos'] ?? 0));
    case 'google.protobuf.Timestamp':
      return timestampJson(longNumber(m['seconds'] ?? 0), Number(m['nanos'] ?? 0));
    case 'google.protobuf.Empty':
      return {};
    case 'google.protobuf.FieldMask': {
      const paths = Array.isArray(m['paths']) ? m['paths'].map(String) : [];
      return paths.map((p) => p.replace(/_([a-z])/g, (_s, c: string) => c.toUpperCase())).join(',');
    }
    case 'google.protobuf.Struct': {
      const fields = isDecoded(m['fields']) ? m['fields'] : {};
      const valueType = messageType('google.protobuf.Value');
      const out: ProtoObject = {};
      for (const [k, v] of Object.entries(fields)) out[k] = messageJson(valueType, v);
      return out;
    }
    case 'google.protobuf.ListValue': {
      const values = Array.isArray(m['values']) ? m['values'] : [];
      const valueType = messageType('google.protobuf.Value');
      return values.map((v: unknown) => messageJson(valueType, v));
    }
    case 'google.protobuf.Value':
      return valueJson(m);
  }
  if (WRAPPERS.has(name)) {
    const field = type.fields['value'];
    // An absent value is the wrapped type's default.
    if (field === undefined) return null;
    if (!Object.hasOwn(m, 'value')) return scalarJson(field, field.typeDefault);
    return scalarJson(field, m['value']);
  }
  return undefined;
}

/** A field of a decoded message under its proto name or its camelCase one (protobufjs' built-in struct.proto uses the latter). */
function own(m: Decoded, protoName: string): { value: unknown } | undefined {
  if (Object.hasOwn(m, protoName)) return { value: m[protoName] };
  const camel = protoName.replace(/_([a-z])/g, (_s, c: string) => c.toUpperCase());
  return Object.hasOwn(m, camel) ? { value: m[camel] } : undefined;
}

function valueJson(m: Decoded): ProtoValue {
  if (own(m, 'null_value')) return null;
  const n = own(m, 'number_value');
  if (n) return floatJson(Number(n.value));
  const s = own(m, 'string_value');
  if (s) return String(s.value);
  const b = own(m, 'bool_value');
  if (b) return b.value === true;
  const st = own(m, 'struct_value');
  if (st) return messageJson(messageType('google.protobuf.Struct'), st.value);
  const l = own(m, 'list_value');
  if (l) return messageJson(messageType('google.protobuf.ListValue'), l.value);
  return null;
}

/**
 * An Any as proto3 JSON: the packed message's fields next to `@type`, or for a
 * well-known type (whose JSON is not an object) its JSON under `value`.
 */
export function anyJson(typeUrl: string, value: unknown): ProtoValue {
  const bytes = value instanceof Uint8Array ? value : new Uint8Array();
  let type: protobuf.Type;
  try {
    type = messageType(typeUrl);
  } catch {
    // A type skein has no schema for cannot be spelled out; keep its bytes.
    return { '@type': typeUrl, value: bytesJson(bytes) };
  }
  const inner = messageJson(type, type.decode(bytes));
  const name = fullName(type);
  if (name.startsWith('google.protobuf.') && (WRAPPERS.has(name) || !isPlainObject(inner)))
    return { '@type': typeUrl, value: inner };
  if (name === 'google.protobuf.Struct' || name === 'google.protobuf.Value')
    return { '@type': typeUrl, value: inner };
  return isPlainObject(inner) ? { '@type': typeUrl, ...inner } : { '@type': typeUrl, value: inner };
}

function isPlainObject(v: ProtoValue): v is ProtoObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Encoded message bytes of a type as proto3 JSON. */
export function bytesToProto3Json(typeUrlOrName: string, bytes: Uint8Array): ProtoValue {
  const type = messageType(typeUrlOrName);
  return messageJson(type, type.decode(bytes));
}
