// Memoisation of pure message builders across MeshViews. The view hands out
// the same objects for unchanged answers (MeshView identity contract), so a
// builder keyed on those objects returns the same message object for an
// unchanged resource, and the encoded-resource interner recognises it without
// encoding or hashing it again.

interface MemoNode<V> {
  next?: WeakMap<object, MemoNode<V>>;
  values?: Map<string, V>;
}

/**
 * A cache of `build()` results keyed on the identity of object inputs (in
 * order) plus a string for the scalar inputs. Entries live only as long as
 * every object they are keyed on (nested WeakMaps), so it never keeps an old
 * view's answers alive. The caller guarantees that the parts and the key
 * determine the result: everything `build` reads must be one of them.
 */
export class IdentityMemo<V> {
  private readonly root: MemoNode<V> = {};

  get(parts: readonly object[], key: string, build: () => V): V {
    let node = this.root;
    for (const part of parts) {
      node.next ??= new WeakMap();
      let child = node.next.get(part);
      if (child === undefined) {
        child = {};
        node.next.set(part, child);
      }
      node = child;
    }
    node.values ??= new Map();
    const known = node.values.get(key);
    if (known !== undefined) return known;
    const built = build();
    node.values.set(key, built);
    return built;
  }
}

/** Stands in for an absent input (undefined cannot key a WeakMap). */
export const NONE: object = Object.freeze({});
