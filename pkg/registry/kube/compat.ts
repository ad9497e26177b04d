// @kubernetes/client-node 2.0.1 depends on undici 8, which requires Node 22.19:
// on Node 20 loading it throws (zlib.createZstdDecompress and
// worker_threads.markAsUncloneable are missing) and its fetch needs
// Promise.withResolvers. Import this module BEFORE anything that imports
// @kubernetes/client-node; it only fills what is missing, so it does nothing on
// newer Node. (Biome keeps side-effect imports where they are.)
import worker from 'node:worker_threads';
import zlib from 'node:zlib';

function fill(target: object, name: string, value: unknown): void {
  if (typeof Reflect.get(target, name) === 'function') return;
  Object.defineProperty(target, name, { value, writable: true, configurable: true });
}

// undici binds it at load time for `content-encoding: zstd`, which the API server never sends.
fill(zlib, 'createZstdDecompress', () => {
  throw new Error('zstd decompression needs Node.js 22.15 or later');
});
// Only marks web objects as not structured-cloneable; a no-op loses nothing we use.
fill(worker, 'markAsUncloneable', () => undefined);
fill(Promise, 'withResolvers', function withResolvers<T>(this: PromiseConstructor) {
  let resolve: (value: T | PromiseLike<T>) => void = () => undefined;
  let reject: (reason?: unknown) => void = () => undefined;
  const promise = new this<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
});
