import { EventEmitter } from 'node:events';
import { type AnyObject, OBJECT_KINDS, type ObjectKind, objectKey } from '../model/objects.js';

export type ObjectOfKind<K extends ObjectKind> = Extract<AnyObject, { kind: K }>;

export interface StoreEvent {
  type: 'added' | 'updated' | 'deleted';
  kind: ObjectKind;
  /** `<namespace>/<name>` or `<name>` for cluster-scoped objects. */
  key: string;
  object: AnyObject;
  /** The previous object for `updated` events. */
  old?: AnyObject;
}

/**
 * MeshStore holds the current, validated objects of every kind skein watches.
 *
 * Contract: registries are the only writers. Objects put into the store are
 * treated as immutable — a writer replaces an object, it never mutates one in
 * place — so readers may keep references and compare them by identity to
 * find what changed. Every effective change emits exactly one `change` event
 * synchronously; writing an object deep-equal to the stored one emits nothing.
 */
export class MeshStore extends EventEmitter<{ change: [StoreEvent] }> {
  private readonly objects = new Map<ObjectKind, Map<string, AnyObject>>(
    OBJECT_KINDS.map((k) => [k, new Map<string, AnyObject>()]),
  );
  private revision = 0;

  /** Monotonic counter, bumped on every effective change. */
  get version(): number {
    return this.revision;
  }

  get<K extends ObjectKind>(kind: K, key: string): ObjectOfKind<K> | undefined {
    return this.objects.get(kind)?.get(key) as ObjectOfKind<K> | undefined;
  }

  list<K extends ObjectKind>(kind: K): ObjectOfKind<K>[] {
    return [...(this.objects.get(kind)?.values() ?? [])] as ObjectOfKind<K>[];
  }

  keys(kind: ObjectKind): string[] {
    return [...(this.objects.get(kind)?.keys() ?? [])];
  }

  /** Adds or replaces an object. Returns false when nothing changed. */
  upsert(object: AnyObject): boolean {
    const byKey = this.objects.get(object.kind);
    if (!byKey) throw new Error(`unknown kind ${object.kind}`);
    const key = objectKey(object);
    const old = byKey.get(key);
    if (old && sameContent(old, object)) return false;
    byKey.set(key, object);
    this.revision++;
    this.emit(
      'change',
      old
        ? { type: 'updated', kind: object.kind, key, object, old }
        : { type: 'added', kind: object.kind, key, object },
    );
    return true;
  }

  /** Removes an object. Returns false when it was not there. */
  delete(kind: ObjectKind, key: string): boolean {
    const byKey = this.objects.get(kind);
    const old = byKey?.get(key);
    if (!byKey || !old) return false;
    byKey.delete(key);
    this.revision++;
    this.emit('change', { type: 'deleted', kind, key, object: old });
    return true;
  }

  /** Replaces every object of a kind at once (used after a full relist). */
  replaceAll(kind: ObjectKind, objects: AnyObject[]): void {
    const incoming = new Map(objects.map((o) => [objectKey(o), o]));
    for (const key of this.keys(kind)) if (!incoming.has(key)) this.delete(kind, key);
    for (const o of incoming.values()) this.upsert(o);
  }
}

// resourceVersion and generation change on no-op writes in Kubernetes; compare
// what matters. JSON key order is stable for objects produced by one parser.
function sameContent(a: AnyObject, b: AnyObject): boolean {
  return JSON.stringify(strip(a)) === JSON.stringify(strip(b));
}
function strip(o: AnyObject): AnyObject {
  const { resourceVersion: _rv, generation: _g, ...metadata } = o.metadata;
  return { ...o, metadata } as AnyObject;
}
