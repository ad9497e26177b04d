import assert from 'node:assert/strict';
import { test } from 'node:test';
import { meshConfig } from '../../test/support/catalog-fixtures.js';
import { INGRESS_PRINCIPAL, ingressObjects } from '../../test/support/envoy/ingress.js';
import { storeOf, viewOf } from '../../test/support/envoy/mesh.js';
import { DEFAULT_MESH_NAME } from '../mesh/constants.js';
import type { AnyObject, Pod } from '../model/objects.js';
import { checkIngress, hostWithoutPort, type IngressSource, ingressText } from './ingress-check.js';

const MESH = DEFAULT_MESH_NAME;
function podNamed(name: string): Pod {
  const p = ingressObjects().find((o): o is Pod => o.kind === 'Pod' && o.metadata.name === name);
  return p ?? assert.fail(name);
}
const store = podNamed('bookstore-v1-1');
const warehouse = podNamed('bookwarehouse-1');

function ask(
  ip: string,
  dst: Pod,
  req: Partial<Omit<IngressSource, 'ip' | 'request'>> & { path?: string; method?: string } = {},
  extra: AnyObject[] = [],
) {
  const { path = '/', method = 'GET', ...rest } = req;
  const v = checkIngress(
    viewOf(storeOf([...ingressObjects(), ...extra])),
    MESH,
    {
      ip,
      request: { path, method, headers: {} },
      ...rest,
    },
    dst,
  );
  return { v, text: ingressText(v, `${dst.metadata.namespace}/${dst.metadata.name}`) };
}

test('http: the IngressBackend source and the Ingress route that admit it, port by port', () => {
  const { v, text } = ask('10.244.9.10', store, { host: 'shop.example.com', path: '/books/1' });
  assert.equal(v.verdict, 'ALLOWED');
  assert.equal(
    text,
    [
      'ALLOWED: 10.244.9.10, GET shop.example.com/books/1 -> bookstore/bookstore-v1-1 (identity bookstore/bookstore-v1)',
      '  bookstore/bookstore-v1 target port 14001 (http, chain ingress_14001_http): allowed by IngressBackend bookstore/shop, Ingress route shop.example.com, Prefix /books',
      '    routed by Ingress bookstore/shop',
      '',
    ].join('\n'),
  );
  // The IPRange source admits its whole range; the Exact path only itself.
  assert.equal(ask('10.0.9.77', store, { host: 'shop.example.com', path: '/about' }).v.verdict, 'ALLOWED');
  const deeper = ask('10.0.9.77', store, { host: 'shop.example.com', path: '/about/x' });
  assert.equal(deeper.v.verdict, 'DENIED');
  assert.match(
    deeper.text,
    /denied: Ingress bookstore\/shop routes only shop\.example\.com, Prefix \/books; shop\.example\.com, Exact \/about here; shop\.example\.com \/about\/x is none of them \(403\)/,
  );
  assert.match(ask('10.0.9.77', store, { path: '/books' }).text, /\(no --host\) \/books is none of them/);
});

test('a source IP outside every IngressBackend: DENIED with the sources; permissive mode admits plaintext', () => {
  const { v, text } = ask('192.0.2.1', store, { host: 'shop.example.com', path: '/books' });
  assert.equal(v.verdict, 'DENIED');
  assert.match(
    text,
    /target port 14001 \(http\): denied: 192\.0\.2\.1 is not among the sources of IngressBackend bookstore\/shop: 10\.0\.9\.0\/24, 10\.244\.9\.10\/32 \(no chain matches: closed\)/,
  );
  const permissive = [meshConfig(MESH, 'skein-system', { traffic: { permissive: true } })];
  const p = ask('192.0.2.1', store, { path: '/admin' }, permissive);
  assert.equal(p.v.verdict, 'ALLOWED');
  assert.match(p.text, /chain inbound-plaintext_14001\): allowed by permissive mode/);
  // The ingress controller's own address still meets its chain's rules in permissive mode.
  const ctl = ask('10.244.9.10', store, { host: 'shop.example.com', path: '/admin' }, permissive);
  assert.equal(ctl.v.verdict, 'DENIED');
  assert.match(ctl.text, /its rules apply even in permissive mode/);
});

test('https: principal, SNI and HTTPRouteGroup matches must all hold; ports without IngressBackend are refused', () => {
  const full = {
    principal: INGRESS_PRINCIPAL,
    sni: 'warehouse.example.com',
    path: '/skein.Warehouse/GetBook',
    method: 'POST',
  };
  const ok = ask('10.0.9.9', warehouse, full);
  assert.equal(ok.v.verdict, 'ALLOWED');
  assert.match(
    ok.text,
    /bookwarehouse\/bookwarehouse target port 14001 \(https, chain ingress_14001_https\): allowed by IngressBackend bookwarehouse\/api, match reads \(path ~ \/skein\\\.Warehouse\/Get\.\*; methods POST\)/,
  );
  assert.match(
    ok.text,
    /note: TLS with the backend's certificate; the client must present a certificate from the mesh CA/,
  );
  assert.match(ok.text, /target port 13306 \(tcp\): denied: no IngressBackend names target port 13306/);
  const { principal: _, ...noPrincipal } = full;
  assert.match(
    ask('10.0.9.9', warehouse, noPrincipal).text,
    /needs a client certificate with SAN .* \(pass --from-principal\)/,
  );
  assert.match(
    ask('10.0.9.9', warehouse, { ...full, sni: 'other' }).text,
    /needs TLS SNI warehouse\.example\.com, not other/,
  );
  assert.match(
    ask('10.0.9.9', warehouse, { ...full, method: 'GET' }).text,
    /spec\.matches admit only reads .*; GET \/skein\.Warehouse\/GetBook matches none/,
  );
});

test('not in the mesh, no Service, problems of the ingress objects', () => {
  const outside = { ...store, metadata: { ...store.metadata, namespace: 'elsewhere' } };
  assert.equal(ask('10.0.9.9', outside).v.verdict, 'NOT_IN_MESH');
  const lonely = { ...store, metadata: { ...store.metadata, labels: { app: 'none' } } };
  assert.match(ask('10.0.9.9', lonely).text, /no Service in the mesh selects pod bookstore\/bookstore-v1-1/);
  const broken: AnyObject = {
    apiVersion: 'policy.skein.dev/v1alpha1',
    kind: 'IngressBackend',
    metadata: { namespace: 'bookstore', name: 'broken' },
    spec: {
      backends: [{ name: 'missing', port: { number: 1, protocol: 'http' } }],
      sources: [{ kind: 'IPRange', name: '10.0.0.1' }],
    },
  };
  assert.match(
    ask('10.0.9.9', store, {}, [broken]).text,
    /\n {2}problem: IngressBackend bookstore\/broken: backend Service bookstore\/missing does not exist/,
  );
  assert.equal(hostWithoutPort('Shop.example.com:8080'), 'shop.example.com');
  assert.equal(hostWithoutPort('[::1]:80'), '::1');
});
