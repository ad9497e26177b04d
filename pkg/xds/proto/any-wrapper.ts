// protobufjs converts `{ '@type': url, ...fields }` into a packed Any through
// its wrapper for google.protobuf.Any, which looks the packed type up by name
// (Namespace.lookup walks the namespace tree) on every call. A listener holds
// dozens of Anys (filters, typed configs, access logs), and that lookup was
// ~19 % of encoding one (`lookup` + the wrapper in a profile of encoding the
// bookstore's listeners). This wrapper remembers the type each `@type` string
// resolved to, per Any type (one per Root), and otherwise converts exactly as
// protobufjs does: the same type_url normalisation, depth limit and fallback.
// A frozen input (a message generators share, envoy/common/freeze.ts) is packed
// once: it cannot change, so its packed Any is kept for as long as it lives.
// Installed through protobufjs's public `wrappers` table before the first type
// is set up (root.ts imports this first).
import protobuf from 'protobufjs';

const ANY = '.google.protobuf.Any';

interface Resolved {
  type: protobuf.Type;
  typeUrl: string;
}

let installed = false;

type FromObject = (this: protobuf.Type, object: { [k: string]: unknown }, depth?: number) => protobuf.Message;

/** Installs the caching Any wrapper once; later calls do nothing. */
export function installAnyTypeCache(): void {
  const original = protobuf.wrappers[ANY];
  const originalFromObject = original?.fromObject as FromObject | undefined;
  if (original === undefined || originalFromObject === undefined || installed) return;
  installed = true;
  const resolvedBy = new WeakMap<protobuf.Type, Map<string, Resolved | null>>();
  const packedFrozen = new WeakMap<object, protobuf.Message>();
  const fromObject: FromObject = function (this: protobuf.Type, object, depth = 0) {
    if (depth > protobuf.util.recursionLimit) throw Error('max depth exceeded');
    const at = object?.['@type'];
    if (typeof at !== 'string' || at === '') return originalFromObject.call(this, object, depth);
    let byUrl = resolvedBy.get(this);
    if (byUrl === undefined) {
      byUrl = new Map();
      resolvedBy.set(this, byUrl);
    }
    let hit = byUrl.get(at);
    if (hit === undefined) {
      // Only the fully qualified name after the last '/' names the type.
      const found = this.lookup(at.substring(at.lastIndexOf('/') + 1));
      // type_url takes no leading '.', and needs a '/' even without a prefix.
      let typeUrl = at.charAt(0) === '.' ? at.slice(1) : at;
      if (!typeUrl.includes('/')) typeUrl = `/${typeUrl}`;
      hit = found instanceof protobuf.Type ? { type: found, typeUrl } : null;
      byUrl.set(at, hit);
    }
    if (hit === null) return originalFromObject.call(this, object, depth);
    const frozen = Object.isFrozen(object);
    const known = frozen ? packedFrozen.get(object) : undefined;
    if (known) return known;
    const fromFields = hit.type.fromObject as FromObject;
    const packed = this.create({
      type_url: hit.typeUrl,
      value: hit.type.encode(fromFields.call(hit.type, object, depth + 1)).finish(),
    });
    if (frozen) packedFrozen.set(object, packed);
    return packed;
  };
  protobuf.wrappers[ANY] = { ...original, fromObject: fromObject as protobuf.WrapperFromObjectConverter };
}
