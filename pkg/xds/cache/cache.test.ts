import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { MeshView, ProxyContext } from '../../catalog/types.js';
import { type GenerationContext, type Resource, TypeUrl } from '../../envoy/types.js';
import { parseProxyCommonName } from '../../mesh/identity.js';
import { decodeDiscoveryResponse, encodeDiscoveryResponse } from '../server/service.js';
import { encodeResource, ResourceInterner } from './encoded.js';
import { GenerationCache, subscriptionKey } from './generation.js';
import { contentVersion } from './version.js';

function cluster(name: string, seconds = 1): Resource {
  return { name, typeUrl: TypeUrl.Cluster, message: { name, type: 3, connect_timeout: { seconds } } };
}

const identity = parseProxyCommonName('00000000-0000-4000-8000-000000000001.sidecar.sa.ns.cluster.local');
function proxy(groupKey: string): ProxyContext {
  return { identity, services: [], groupKey };
}
function ctx(version: number, trustBundlePem = 'ca'): GenerationContext {
  // Only `version` is read by the cache.
  const mesh: Pick<MeshView, 'version'> = { version };
  return {
    mesh: { ...emptyView, ...mesh },
    secrets: { trustBundlePem, serviceCertificate: () => undefined },
  };
}
const emptyView: MeshView = {
  version: 0,
  permissive: true,
  trustDomain: 'cluster.local',
  services: () => [],
  service: () => undefined,
  serviceByHost: () => undefined,
  endpoints: () => [],
  serviceIdentities: () => [],
  inMesh: () => true,
  podOfProxy: () => undefined,
  servicesOfPod: () => [],
  outboundServices: () => [],
  split: () => undefined,
  inboundRules: () => [],
};
const wildcard = { names: undefined, key: subscriptionKey(undefined) };

describe('ResourceInterner', () => {
  it('returns one shared encoding for equal content built from different objects', () => {
    const interner = new ResourceInterner();
    const a = interner.intern(cluster('a'));
    const b = interner.intern(cluster('a'));
    assert.equal(a, b);
    assert.notEqual(interner.intern(cluster('a', 2)), a);
    assert.equal(interner.size, 2);
  });

  it('sweeps entries no generation produced in the last epoch', () => {
    const interner = new ResourceInterner();
    interner.intern(cluster('old'));
    interner.intern(cluster('kept'));
    interner.advance();
    interner.intern(cluster('kept'));
    assert.equal(interner.advance(), 1); // 'old' untouched for a whole epoch
    assert.equal(interner.size, 1);
  });

  it('recognises a message object it already encoded, even after a sweep evicted it', () => {
    const interner = new ResourceInterner();
    const r = cluster('a');
    const first = interner.intern(r);
    assert.equal(interner.encodes, 1);
    assert.equal(interner.intern(r), first);
    interner.advance();
    interner.advance();
    assert.equal(interner.size, 0); // swept
    assert.equal(interner.intern(r), first);
    assert.equal(interner.encodes, 1); // not encoded again
    assert.equal(interner.size, 1); // and back in the table, so equal content shares it
    assert.equal(interner.intern(cluster('a')), first);
    assert.equal(interner.encodes, 2);
  });

  it('frames a resource as a DiscoveryResponse.resources entry', () => {
    const r = encodeResource(cluster('a'));
    const bytes = encodeDiscoveryResponse({
      versionInfo: 'v1',
      resources: [r, encodeResource(cluster('b'))],
      typeUrl: TypeUrl.Cluster,
      nonce: 'n1',
      controlPlaneId: 'skein',
    });
    const decoded = decodeDiscoveryResponse(bytes);
    assert.equal(decoded.versionInfo, 'v1');
    assert.equal(decoded.nonce, 'n1');
    assert.equal(decoded.typeUrl, TypeUrl.Cluster);
    assert.equal(decoded.controlPlaneId, 'skein');
    assert.deepEqual(
      decoded.resources.map((x) => x.typeUrl),
      [TypeUrl.Cluster, TypeUrl.Cluster],
    );
  });
});

describe('contentVersion', () => {
  it('depends on content, not order', () => {
    const a = encodeResource(cluster('a'));
    const b = encodeResource(cluster('b'));
    assert.equal(contentVersion([a, b]), contentVersion([b, a]));
    assert.notEqual(contentVersion([a, b]), contentVersion([a, encodeResource(cluster('b', 2))]));
    assert.notEqual(contentVersion([a]), contentVersion([a, b]));
  });
});

describe('GenerationCache', () => {
  it('generates once per (view version, type, group, names) and drops old versions', () => {
    const cache = new GenerationCache(new ResourceInterner());
    let calls = 0;
    const gen = () => {
      calls++;
      return [cluster('b'), cluster('a')];
    };
    const s1 = cache.get(TypeUrl.Cluster, proxy('g1'), ctx(1), wildcard, gen);
    assert.deepEqual(
      s1.resources.map((r) => r.name),
      ['a', 'b'],
    );
    assert.equal(cache.get(TypeUrl.Cluster, proxy('g1'), ctx(1), wildcard, gen), s1);
    cache.get(TypeUrl.Cluster, proxy('g2'), ctx(1), wildcard, gen);
    cache.get(
      TypeUrl.Cluster,
      proxy('g1'),
      ctx(1),
      { names: new Set(['a']), key: subscriptionKey(new Set(['a'])) },
      gen,
    );
    assert.equal(calls, 3);
    assert.equal(cache.size, 3);
    const s2 = cache.get(TypeUrl.Cluster, proxy('g1'), ctx(2), wildcard, gen);
    assert.equal(calls, 4);
    assert.equal(cache.size, 1);
    assert.equal(s2.version, s1.version); // same content in a new view: same version
    cache.get(TypeUrl.Cluster, proxy('g1'), ctx(2, 'rotated-ca'), wildcard, gen);
    assert.equal(calls, 5); // a new trust bundle invalidates too
  });

  it('never caches the uncached types', () => {
    const cache = new GenerationCache(new ResourceInterner(), [TypeUrl.Cluster]);
    let calls = 0;
    const gen = () => {
      calls++;
      return [cluster('a')];
    };
    cache.get(TypeUrl.Cluster, proxy('g1'), ctx(1), wildcard, gen);
    cache.get(TypeUrl.Cluster, proxy('g1'), ctx(1), wildcard, gen);
    assert.equal(calls, 2);
  });

  it('filters to the requested names and reports duplicates (rule 9)', () => {
    const cache = new GenerationCache(new ResourceInterner());
    const names = new Set(['a', 'c']);
    const set = cache.get(TypeUrl.Cluster, proxy('g'), ctx(1), { names, key: subscriptionKey(names) }, () => [
      cluster('a'),
      cluster('b'),
      cluster('a', 9),
    ]);
    assert.deepEqual(
      set.resources.map((r) => r.name),
      ['a'],
    );
    assert.deepEqual(set.duplicateNames, ['a']);
  });
});

describe('GenerationCache for secret-dependent types', () => {
  function secretCtx(secretsVersion: number | undefined): GenerationContext {
    const c = ctx(1);
    const secrets =
      secretsVersion === undefined
        ? { trustBundlePem: 'ca', serviceCertificate: () => undefined }
        : { trustBundlePem: 'ca', version: secretsVersion, serviceCertificate: () => undefined };
    return { mesh: c.mesh, secrets };
  }
  const secret = (name: string): Resource => ({ name, typeUrl: TypeUrl.Secret, message: { name } });

  it('reuses SDS output until the secrets version moves', () => {
    const cache = new GenerationCache(new ResourceInterner(), [TypeUrl.Secret]);
    let calls = 0;
    const gen = () => {
      calls++;
      return [secret('service-cert:ns/sa')];
    };
    cache.get(TypeUrl.Secret, proxy('g'), secretCtx(1), wildcard, gen);
    cache.get(TypeUrl.Secret, proxy('g'), secretCtx(1), wildcard, gen);
    assert.equal(calls, 1);
    cache.get(TypeUrl.Secret, proxy('g'), secretCtx(2), wildcard, gen);
    assert.equal(calls, 2);
  });

  it('rebuilds SDS on every call when the source has no version', () => {
    const cache = new GenerationCache(new ResourceInterner(), [TypeUrl.Secret]);
    let calls = 0;
    const gen = () => {
      calls++;
      return [secret('service-cert:ns/sa')];
    };
    cache.get(TypeUrl.Secret, proxy('g'), secretCtx(undefined), wildcard, gen);
    cache.get(TypeUrl.Secret, proxy('g'), secretCtx(undefined), wildcard, gen);
    assert.equal(calls, 2);
  });

  it('a secrets change leaves other types cached', () => {
    const cache = new GenerationCache(new ResourceInterner(), [TypeUrl.Secret]);
    let calls = 0;
    const gen = () => {
      calls++;
      return [cluster('c')];
    };
    cache.get(TypeUrl.Cluster, proxy('g'), secretCtx(1), wildcard, gen);
    cache.get(TypeUrl.Cluster, proxy('g'), secretCtx(2), wildcard, gen);
    assert.equal(calls, 1);
  });
});
