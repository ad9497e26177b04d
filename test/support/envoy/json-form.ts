// Test helper: proto3 JSON → protobufjs fromObject form for the one well-known type
// the injector's bootstrap writes in JSON form, Duration ("0.25s" → {seconds, nanos}),
// so what Envoy reads as JSON can be encoded and checked with the protobufjs tools.
import protobuf from 'protobufjs';
import type { ProtoObject, ProtoValue } from '../../../pkg/envoy/types.js';
import { parsedType } from './proto-types.js';

const DURATION = '.google.protobuf.Duration';

function isObj(v: ProtoValue): v is ProtoObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);
}

function convert(type: protobuf.Type, value: ProtoValue): ProtoValue {
  if (!isObj(value)) return value;
  if (type.fullName === '.google.protobuf.Any') {
    const url = value['@type'];
    if (typeof url !== 'string') return value;
    const { '@type': _t, ...body } = value;
    return { '@type': url, ...(convert(parsedType(url), body) as ProtoObject) };
  }
  const out: ProtoObject = {};
  for (const [key, v] of Object.entries(value)) {
    const field = type.fields[key];
    field?.resolve();
    const rt = field?.resolvedType;
    const one = (item: ProtoValue): ProtoValue => {
      if (rt instanceof protobuf.Type && rt.fullName === DURATION && typeof item === 'string') {
        const [whole = '0', frac = ''] = item.slice(0, -1).split('.');
        return { seconds: Number(whole), nanos: Number(frac.padEnd(9, '0')) };
      }
      return rt instanceof protobuf.Type ? convert(rt, item) : item;
    };
    out[key] = Array.isArray(v) ? v.map(one) : one(v);
  }
  return out;
}

/** A copy of `message` (of `typeUrl`) in fromObject form: its proto3 JSON Durations as objects. */
export function fromObjectForm(typeUrl: string, message: ProtoObject): ProtoObject {
  return convert(parsedType(typeUrl), message) as ProtoObject;
}
