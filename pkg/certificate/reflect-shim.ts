/**
 * @peculiar/x509 resolves its algorithm plugins through tsyringe, which refuses
 * to load unless `Reflect.getMetadata` exists (the reflect-metadata polyfill).
 * It only ever calls these three functions on class constructors, so a small
 * WeakMap-backed shim is enough; a real polyfill, if loaded, wins.
 * Import this module before '@peculiar/x509'.
 */
type MetadataTable = Map<unknown, unknown>;

const tables = new WeakMap<object, MetadataTable>();

function ownTable(target: object, create: boolean): MetadataTable | undefined {
  let table = tables.get(target);
  if (table === undefined && create) {
    table = new Map();
    tables.set(target, table);
  }
  return table;
}

function getOwnMetadata(key: unknown, target: object): unknown {
  return ownTable(target, false)?.get(key);
}

function getMetadata(key: unknown, target: object): unknown {
  // reflect-metadata semantics: walk the prototype chain (class inheritance).
  for (let t: object | null = target; t !== null; t = Object.getPrototypeOf(t)) {
    const table = ownTable(t, false);
    if (table?.has(key)) return table.get(key);
  }
  return undefined;
}

function defineMetadata(key: unknown, value: unknown, target: object): void {
  ownTable(target, true)?.set(key, value);
}

if (!('getMetadata' in Reflect)) {
  for (const [name, fn] of Object.entries({ getOwnMetadata, getMetadata, defineMetadata })) {
    Object.defineProperty(Reflect, name, { value: fn, configurable: true, writable: true });
  }
}
