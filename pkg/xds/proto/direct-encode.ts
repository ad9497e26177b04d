// Encodes a message straight from `fromObject` form (proto field names, enum
// names or numbers, Anys with `@type`) to protobuf bytes, without building
// protobufjs Message objects first. `type.encode(type.fromObject(o))` made a
// Message for every node of the tree and packed every Any on the way: ~80 % of
// encoding a resource, measured on the bookstore's 75 resources (0.64 of 0.84
// ms per round, warm). Here each type gets an encoder generated once, and a
// message is one pass over its present fields into one buffer (buffer-writer.ts).
//
// The bytes are those protobufjs writes, field for field: fields in field
// number order, proto3 repeated scalars packed, map entries key then value,
// present-but-default values written (protobufjs writes every own property).
// direct-encode.test.ts checks that against protobufjs for every resource the
// test meshes generate. Two things protobufjs lets pass fail here, because
// both ship a configuration that is not the one the generator meant: an enum
// name the enum does not have (protobufjs drops the field) and an Any whose
// `@type` names no loaded type (protobufjs sends an empty Any).
import protobuf from 'protobufjs';
import { BufferWriter } from './buffer-writer.js';

type Writer = BufferWriter;
type Plain = { readonly [k: string]: unknown };
type Write = (w: Writer, v: unknown) => void;

const ANY = '.google.protobuf.Any';
const WIRE_VARINT = 0;
const WIRE_LDELIM = 2;

/** A field's tag (field number and wire type) as the varint protobufjs writes. */
function tag(id: number, wire: number): number {
  return ((id << 3) | wire) >>> 0;
}

/** bytes as protobufjs's fromObject takes them: base64, a Uint8Array, or an array of byte values. */
function bytesOf(v: unknown, where: string): Uint8Array {
  if (typeof v === 'string') return Buffer.from(v, 'base64');
  if (v instanceof Uint8Array) return v;
  if (Array.isArray(v)) return Uint8Array.from(v as number[]);
  throw new TypeError(`${where}: bytes expected`);
}

/** Writes one scalar, coerced as protobufjs's fromObject coerces it. */
function scalarWriter(type: string, where: string): Write {
  switch (type) {
    case 'double':
      return (w, v) => w.double(Number(v));
    case 'float':
      return (w, v) => w.float(Number(v));
    case 'int32':
      return (w, v) => w.int32(Number(v) | 0);
    case 'sint32':
      return (w, v) => w.sint32(Number(v) | 0);
    case 'sfixed32':
      return (w, v) => w.sfixed32(Number(v) | 0);
    case 'uint32':
      return (w, v) => w.uint32(Number(v) >>> 0);
    case 'fixed32':
      return (w, v) => w.fixed32(Number(v) >>> 0);
    // 64-bit: the writer takes a number, a decimal string or a bigint as it is.
    case 'int64':
      return (w, v) => w.int64(v as number);
    case 'uint64':
      return (w, v) => w.uint64(v as number);
    case 'sint64':
      return (w, v) => w.sint64(v as number);
    case 'fixed64':
      return (w, v) => w.fixed64(v as number);
    case 'sfixed64':
      return (w, v) => w.sfixed64(v as number);
    case 'bool':
      return (w, v) => w.bool(Boolean(v));
    case 'string':
      return (w, v) => w.string(String(v));
    case 'bytes':
      return (w, v) => w.bytes(bytesOf(v, where));
    default:
      throw new Error(`${where}: unknown scalar type ${type}`);
  }
}

function notAValue(where: string, enumName: string, v: unknown): never {
  throw new TypeError(`${where}: ${String(v)} is not a value of ${enumName}`);
}

/** An enum's values by name, without a prototype (so `toString` is no value). */
function enumTable(e: protobuf.Enum): { [name: string]: number } {
  return Object.assign(Object.create(null) as { [name: string]: number }, e.values);
}

/** Writes an enum value given by name or number (as int32, as protobufjs does). */
function enumWriter(e: protobuf.Enum, where: string): Write {
  const values = enumTable(e);
  return (w, v) => {
    const n = typeof v === 'number' ? v : typeof v === 'string' ? values[v] : undefined;
    if (n === undefined) notAValue(where, e.fullName, v);
    w.int32(n);
  };
}

/** One compiled type. */
interface Plan {
  encode(o: Plain, w: Writer, depth: number): void;
}

const plans = new WeakMap<protobuf.Type, Plan>();

function planOf(type: protobuf.Type): Plan {
  let plan = plans.get(type);
  if (plan === undefined) {
    plan = type.fullName === ANY ? anyPlan(type) : messagePlan(type);
    plans.set(type, plan);
  }
  return plan;
}

/** What generated code calls: writers of scalars and enums, and nested types' plans (resolved on first use). */
interface Helpers {
  write: Write[];
  enums: { [name: string]: number }[];
  notAValue: typeof notAValue;
  plan: (i: number) => Plan;
  fail: typeof fail;
}

function fail(where: string, what: string): never {
  throw new TypeError(`${where}: ${what} expected`);
}

/**
 * The encoder of one type as generated code, one block per field in field number order.
 * Generated rather than interpreted: with constant property names V8 reads each field
 * through a named-property cache, where a loop over field names reads keyed and
 * megamorphic (an interpreted plan was no faster than fromObject + encode). The code holds
 * only names and numbers of the loaded protos (names quoted by JSON.stringify), never input,
 * as protobufjs's own generated encoders do.
 */
function messagePlan(type: protobuf.Type): Plan {
  // Nested types' plans are looked up on first use: types may refer to each other.
  const nested: protobuf.Type[] = [];
  const nestedPlans: (Plan | undefined)[] = [];
  const h: Helpers = {
    write: [],
    enums: [],
    notAValue,
    plan: (i) => {
      nestedPlans[i] ??= planOf(nested[i] as protobuf.Type);
      return nestedPlans[i];
    },
    fail,
  };
  const helper = (fn: Write) => h.write.push(fn) - 1;
  const nestedIndex = (t: protobuf.Type) => nested.push(t) - 1;
  const lines: string[] = ['if (d > LIMIT) throw new Error("max depth exceeded");', 'var v, i, n;'];
  const fields = [...type.fieldsArray].sort((a, b) => a.id - b.id);
  for (const field of fields) {
    field.resolve();
    const key = JSON.stringify(field.name);
    const where = JSON.stringify(field.fullName);
    const rt = field.resolvedType;
    lines.push(`v = o[${key}];`, 'if (v != null) {');
    if (field instanceof protobuf.MapField) {
      const keyWire = protobuf.types.mapKey[field.keyType as keyof typeof protobuf.types.mapKey];
      if (keyWire === undefined) throw new Error(`${field.fullName}: unsupported map key ${field.keyType}`);
      const k = helper(scalarWriter(field.keyType, field.fullName));
      lines.push(
        `if (typeof v !== "object") h.fail(${where}, "object");`,
        'for (var ks = Object.keys(v), j = 0; j < ks.length; j++) {',
        `w.uint32(${tag(field.id, WIRE_LDELIM)}).fork();`,
        `h.write[${k}](w.uint32(${tag(1, keyWire)}), ks[j]);`,
        'n = v[ks[j]];',
      );
      if (rt instanceof protobuf.Type) {
        lines.push(
          `if (typeof n !== "object" || n === null) h.fail(${where}, "object");`,
          `w.uint32(${tag(2, WIRE_LDELIM)}).fork(); h.plan(${nestedIndex(rt)}).encode(n, w, d + 1); w.ldelim();`,
        );
      } else {
        const isEnum = rt instanceof protobuf.Enum;
        const wire = isEnum ? WIRE_VARINT : basicWire(field);
        const f = helper(isEnum ? enumWriter(rt, field.fullName) : scalarWriter(field.type, field.fullName));
        lines.push(`h.write[${f}](w.uint32(${tag(2, wire)}), n);`);
      }
      lines.push('w.ldelim();', '}');
    } else if (rt instanceof protobuf.Type) {
      const t = tag(field.id, WIRE_LDELIM);
      const ni = nestedIndex(rt);
      if (field.repeated) {
        lines.push(
          `if (!Array.isArray(v)) h.fail(${where}, "array");`,
          'for (i = 0; i < v.length; i++) {',
          'n = v[i];',
          `if (typeof n !== "object" || n === null) h.fail(${where}, "object");`,
          `w.uint32(${t}).fork(); h.plan(${ni}).encode(n, w, d + 1); w.ldelim();`,
          '}',
        );
      } else {
        lines.push(
          `if (typeof v !== "object") h.fail(${where}, "object");`,
          `w.uint32(${t}).fork(); h.plan(${ni}).encode(v, w, d + 1); w.ldelim();`,
        );
      }
    } else {
      const isEnum = rt instanceof protobuf.Enum;
      const wire = isEnum ? WIRE_VARINT : basicWire(field);
      const writer = () =>
        helper(isEnum ? enumWriter(rt, field.fullName) : scalarWriter(field.type, field.fullName));
      const packable =
        isEnum || protobuf.types.packed[field.type as keyof typeof protobuf.types.packed] !== undefined;
      if (field.repeated && field.packed && packable) {
        lines.push(
          `if (!Array.isArray(v)) h.fail(${where}, "array");`,
          `if (v.length > 0) { w.uint32(${tag(field.id, WIRE_LDELIM)}).fork(); for (i = 0; i < v.length; i++) h.write[${writer()}](w, v[i]); w.ldelim(); }`,
        );
      } else if (field.repeated) {
        lines.push(
          `if (!Array.isArray(v)) h.fail(${where}, "array");`,
          `for (i = 0; i < v.length; i++) h.write[${writer()}](w.uint32(${tag(field.id, wire)}), v[i]);`,
        );
      } else if (isEnum) {
        const e = h.enums.push(enumTable(rt)) - 1;
        lines.push(
          `if (typeof v === "number") n = v; else { n = h.enums[${e}][v]; if (n === undefined) h.notAValue(${where}, ${JSON.stringify(rt.fullName)}, v); }`,
          `w.uint32(${tag(field.id, wire)}).int32(n);`,
        );
      } else {
        const inline = inlineScalar(field.type, 'v');
        lines.push(
          inline !== undefined
            ? `w.uint32(${tag(field.id, wire)})${inline};`
            : `h.write[${writer()}](w.uint32(${tag(field.id, wire)}), v);`,
        );
      }
    }
    lines.push('}');
  }
  const code = lines.join('\n');
  const encode = new Function('h', 'LIMIT', `return function encode_${type.name}(o, w, d) {\n${code}\n};`)(
    h,
    protobuf.util.recursionLimit,
  ) as Plan['encode'];
  return { encode };
}

/** The call writing scalar `x`, coerced as fromObject coerces it, chained after a tag; undefined = use a helper. */
function inlineScalar(type: string, x: string): string | undefined {
  switch (type) {
    case 'string':
      return `.string(typeof ${x} === "string" ? ${x} : String(${x}))`;
    case 'bool':
      return `.bool(!!${x})`;
    case 'uint32':
      return `.uint32(+${x} >>> 0)`;
    case 'int32':
      return `.int32(+${x} | 0)`;
    case 'double':
      return `.double(+${x})`;
    default:
      return undefined;
  }
}

function basicWire(field: protobuf.Field): number {
  const wire = protobuf.types.basic[field.type as keyof typeof protobuf.types.basic];
  if (wire === undefined) throw new Error(`${field.fullName}: no wire type for ${field.type}`);
  return wire;
}

/**
 * google.protobuf.Any: `{ '@type': url, ...fields }` is packed (type_url = 1,
 * value = 2); without `@type` its own fields are written. A frozen Any (a
 * message generators share, envoy/common/freeze.ts) is packed once: it cannot
 * change, so its value bytes are kept for as long as it lives.
 */
function anyPlan(anyType: protobuf.Type): Plan {
  const plain = messagePlan(anyType);
  const resolved = new Map<string, { plan: Plan; typeUrl: string }>();
  const packedFrozen = new WeakMap<object, Uint8Array>();
  const TYPE_URL = tag(1, WIRE_LDELIM);
  const VALUE = tag(2, WIRE_LDELIM);
  const resolve = (at: string) => {
    let hit = resolved.get(at);
    if (hit === undefined) {
      // Only the fully qualified name after the last '/' names the type.
      const found = anyType.lookup(at.substring(at.lastIndexOf('/') + 1));
      if (!(found instanceof protobuf.Type))
        throw new TypeError(`Any: no loaded message type for @type ${at}`);
      // type_url takes no leading '.', and needs a '/' even without a prefix (as protobufjs writes it).
      let typeUrl = at.charAt(0) === '.' ? at.slice(1) : at;
      if (!typeUrl.includes('/')) typeUrl = `/${typeUrl}`;
      hit = { plan: planOf(found), typeUrl };
      resolved.set(at, hit);
    }
    return hit;
  };
  return {
    encode(o, w, depth) {
      if (depth > protobuf.util.recursionLimit) throw new Error('max depth exceeded');
      const at = o['@type'];
      if (typeof at !== 'string' || at === '') {
        plain.encode(o, w, depth);
        return;
      }
      const { plan, typeUrl } = resolve(at);
      w.uint32(TYPE_URL).string(typeUrl);
      if (!Object.isFrozen(o)) {
        w.uint32(VALUE).fork();
        plan.encode(o, w, depth + 1);
        w.ldelim();
        return;
      }
      const value = packedFrozen.get(o);
      if (value !== undefined) {
        w.uint32(VALUE).bytes(value);
        return;
      }
      w.uint32(VALUE).fork();
      plan.encode(o, w, depth + 1);
      const n = w.ldelim();
      // Its own copy of the value's bytes, which end where the writer stands.
      packedFrozen.set(o, new Uint8Array(w.view(w.length - n)));
    },
  };
}

const scratch = new BufferWriter();

/** Encodes `message` (fromObject form) as `type`. Throws on input protobufjs would convert wrongly or drop. */
export function encodeDirect(type: protobuf.Type, message: Plain): Uint8Array {
  scratch.reset();
  planOf(type).encode(message, scratch, 0);
  return scratch.finish();
}

/** Appends `message` (fromObject form) encoded as `type` to `w`, e.g. inside a message `w` has forked. */
export function encodeInto(w: BufferWriter, type: protobuf.Type, message: Plain): void {
  planOf(type).encode(message, w, 0);
}
