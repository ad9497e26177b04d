import assert from 'node:assert/strict';
import { test } from 'node:test';
import { meshConfig } from '../../test/support/catalog-fixtures.js';
import { egress, egressMesh } from '../../test/support/envoy/egress-fixtures.js';
import { bookstoreObjects } from '../../test/support/envoy/mesh.js';
import { DEFAULT_MESH_NAME } from '../mesh/constants.js';
import type { AnyObject, Pod } from '../model/objects.js';
import { checkEgress, egressText, meshServiceAt, parseEgressTarget } from './egress-check.js';
import { UsageError } from './errors.js';

const MESH = DEFAULT_MESH_NAME;
function podNamed(name: string): Pod {
  const p = bookstoreObjects().find((o): o is Pod => o.kind === 'Pod' && o.metadata.name === name);
  return p ?? assert.fail(name);
}
const buyer = podNamed('bookbuyer-1');
const thief = podNamed('bookthief-1');
const ask = (
  to: string,
  opts: { extra?: AnyObject[]; address?: string; method?: string; pod?: Pod } = {},
) => {
  const v = checkEgress(
    egressMesh(opts.extra),
    MESH,
    opts.pod ?? buyer,
    parseEgressTarget(to, opts.address),
    {
      method: opts.method ?? 'GET',
    },
  );
  return { v, text: egressText(v, 'bookbuyer/bookbuyer-1') };
};

test('--to forms: http with path, https, tcp, bare host:port, IPv6; bad ones are usage errors', () => {
  assert.deepEqual(parseEgressTarget('http://API.example.com/v1/x?q=1'), {
    scheme: 'http',
    host: 'api.example.com',
    port: 80,
    path: '/v1/x?q=1',
  });
  assert.equal(parseEgressTarget('https://github.com').port, 443);
  assert.deepEqual(parseEgressTarget('10.1.0.5:5432'), {
    scheme: 'tcp',
    host: '10.1.0.5',
    port: 5432,
    path: '',
    address: '10.1.0.5',
  });
  assert.equal(parseEgressTarget('tcp://[2001:db8::1]:25').address, '2001:db8::1');
  assert.equal(parseEgressTarget('db.example.com:5432', '10.1.0.5').address, '10.1.0.5');
  assert.throws(() => parseEgressTarget('tcp://db.example.com'), UsageError);
  assert.throws(() => parseEgressTarget('ftp://x'), /scheme ftp is not one of http, https, tcp/);
  assert.throws(() => parseEgressTarget('db:1', 'not-an-ip'), /--address "not-an-ip" is not an IP address/);
});

test('http: ALLOWED names the Egress and its HTTPRouteGroup match; the route and the cluster it takes', () => {
  const { v, text } = ask('http://api.example.com/v1/books');
  assert.equal(v.verdict, 'ALLOWED');
  assert.equal(
    text,
    [
      'ALLOWED: bookbuyer/bookbuyer-1 (identity bookbuyer/bookbuyer) -> http://api.example.com/v1/books',
      '  allowed by Egress bookbuyer/api, match get (path ~ /v1/.*; methods GET)',
      '  via egress_http_80 → cluster api.example.com:80',
      '',
    ].join('\n'),
  );
  const post = ask('http://api.example.com/v1/books', { method: 'POST' });
  assert.equal(post.v.verdict, 'DENIED');
  assert.match(
    post.text,
    /Egress bookbuyer\/api allows api\.example\.com on port 80 only for requests matching: get /,
  );
  const other = ask('http://evil.example.com/');
  assert.match(
    other.text,
    /denied: host evil\.example\.com is not allowed on port 80 for bookbuyer\/bookbuyer; allowed hosts: api\.example\.com/,
  );
});

test('https: SNI decides; port mismatch and protocol mismatch say so', () => {
  const ok = ask('https://api.github.com');
  assert.equal(ok.v.verdict, 'ALLOWED');
  assert.match(
    ok.text,
    /allowed by Egress bookbuyer\/github\n {2}via egress_https_443 \(SNI \*\.github\.com, github\.com\)/,
  );
  assert.match(
    ask('https://gitlab.com').text,
    /SNI gitlab\.com is not allowed on port 443 .*allowed: \*\.github\.com, github\.com/,
  );
  assert.match(
    ask('https://github.com:8443').text,
    /no Egress allows port 8443 for bookbuyer\/bookbuyer; its Egress ports: 25 \(tcp-server-first\), 80 \(http\), 443 \(https\), 5432 \(tcp\); github\.com is allowed on port 443 \(Egress bookbuyer\/github\), not on 8443/,
  );
  assert.match(
    ask('http://github.com:443/').text,
    /port 443 is an https Egress port .*only TLS passes there, this client sends HTTP/,
  );
});

test('tcp: by address; a name without --address is answered as outside the ranges', () => {
  assert.equal(ask('tcp://10.1.7.7:5432').v.verdict, 'ALLOWED');
  const far = ask('10.9.0.1:5432');
  assert.match(
    far.text,
    /Egress bookbuyer\/db allows port 5432 only to 10\.1\.0\.0\/16; 10\.9\.0\.1 is not in them/,
  );
  assert.match(ask('db.example.com:5432').text, /db\.example\.com is a name: pass --address/);
  const resolved = ask('db.example.com:5432', { address: '10.1.0.9' });
  assert.equal(resolved.v.verdict, 'ALLOWED');
  assert.match(resolved.text, /-> tcp:\/\/db\.example\.com:5432 \(address 10\.1\.0\.9\)/);
  assert.match(ask('tcp://10.2.0.3:25').text, /note: tcp-server-first/);
});

test('no Egress for the identity; enableEgress and permissive mode allow and say why', () => {
  const none = ask('https://github.com', { pod: thief });
  assert.equal(none.v.verdict, 'DENIED');
  assert.match(none.text, /denied: no Egress lists bookthief\/bookthief as a source/);
  const open = [meshConfig(MESH, 'skein-system', { traffic: { permissive: false, enableEgress: true } })];
  const passthrough = ask('tcp://8.8.8.8:53', { extra: open, pod: thief });
  assert.equal(passthrough.v.verdict, 'ALLOWED');
  assert.match(
    passthrough.text,
    /allowed by MeshConfig spec\.traffic\.enableEgress\n {2}via default chain → passthrough-outbound/,
  );
  const permissive = [meshConfig(MESH, 'skein-system', { traffic: { permissive: true } })];
  assert.match(
    ask('tcp://8.8.8.8:53', { extra: permissive }).text,
    /permissive mode: everything outside the mesh leaves unchanged/,
  );
});

test('problems of the Egress objects that apply to the source are named with the answer', () => {
  const broken = egress('bookbuyer', 'broken', {
    sources: [{ kind: 'ServiceAccount', name: 'bookbuyer', namespace: 'bookbuyer' }],
    hosts: ['broken.example.com'],
    ports: [{ number: 8080, protocol: 'http' }],
    matches: [{ kind: 'HTTPRouteGroup', name: 'missing' }],
  });
  const { v, text } = ask('http://broken.example.com:8080/', { extra: [broken] });
  assert.equal(v.verdict, 'DENIED');
  assert.match(text, /only for requests matching: none/);
  assert.match(
    text,
    /\n {2}problem: Egress bookbuyer\/broken: HTTPRouteGroup bookbuyer\/missing does not exist/,
  );
  // Not the thief's business.
  const t = checkEgress(
    egressMesh([broken]),
    MESH,
    thief,
    parseEgressTarget('http://broken.example.com:8080/'),
  );
  assert.ok(t.verdict === 'DENIED' && t.problems.length === 0, JSON.stringify(t));
});

test('an Egress rule dropped for the source by a port conflict is named as a problem', () => {
  const clash = egress('bookbuyer', 'zz-raw-80', {
    sources: [{ kind: 'ServiceAccount', name: 'bookbuyer', namespace: 'bookbuyer' }],
    ports: [{ number: 80, protocol: 'tcp' }],
  });
  const { v, text } = ask('tcp://192.0.2.1:80', { extra: [clash] });
  assert.equal(v.verdict, 'DENIED');
  assert.match(text, /port 80 is an http Egress port .*Egress bookbuyer\/api/);
  assert.match(
    text,
    /problem: Egress bookbuyer\/zz-raw-80: port 80 is http for bookbuyer\/bookbuyer in Egress bookbuyer\/api; this tcp rule is ignored for it/,
  );
});

test('a mesh Service is not a destination outside the mesh', () => {
  const mesh = egressMesh();
  assert.equal(meshServiceAt(mesh, 'bookstore.bookstore.svc.cluster.local')?.key, 'bookstore/bookstore');
  assert.equal(meshServiceAt(mesh, '10.96.0.20')?.key, 'bookwarehouse/bookwarehouse');
  assert.equal(meshServiceAt(mesh, 'github.com'), undefined);
});
