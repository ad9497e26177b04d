import assert from 'node:assert/strict';
import { isIPv4 } from 'node:net';
import { test } from 'node:test';
import { PORT_LIVENESS_PROBE, PORT_READINESS_PROBE, PORT_STARTUP_PROBE } from './constants.js';
import { type Exclusions, NO_EXCLUSIONS, parseExclusions } from './exclusions.js';
import { defaultProxyServedPorts, renderIptablesRules } from './iptables.js';

// A tiny nat-table interpreter: it understands exactly the matchers the
// renderer may emit and throws on anything else, so every rendered line is
// either understood or fails the test.

interface Packet {
  /** PREROUTING for traffic arriving at the pod, OUTPUT for traffic a local process sends. */
  hook: 'PREROUTING' | 'OUTPUT';
  proto?: 'tcp' | 'udp';
  dst: string;
  dport: number;
  /** Owner of the sending socket (OUTPUT only). */
  uid?: number;
  /** Output interface chosen by routing (OUTPUT only). */
  outIface?: string;
}

type Verdict = { action: 'ACCEPT' } | { action: 'REDIRECT'; port: number };

type Matcher = (p: Packet) => boolean;

interface Rule {
  line: number;
  text: string;
  matchers: Matcher[];
  target: string;
  toPort?: number;
}

interface Table {
  policies: Map<string, string>;
  chains: Map<string, Rule[]>;
}

function ipToInt(ip: string): number {
  assert.ok(isIPv4(ip), `not IPv4: ${ip}`);
  return ip.split('.').reduce((acc, o) => acc * 256 + Number(o), 0);
}

function inCidr(ip: string, cidr: string): boolean {
  const [net, len] = cidr.split('/');
  const bits = Number(len ?? '32');
  if (bits === 0) return true;
  const size = 2 ** (32 - bits);
  return Math.floor(ipToInt(ip) / size) === Math.floor(ipToInt(net ?? '') / size);
}

function parseRule(chain: string, tokens: string[], line: number, text: string): Rule {
  const rule: Rule = { line, text, matchers: [], target: '' };
  let negate = false;
  let ownerLoaded = false;
  const take = (i: number): string => {
    const v = tokens[i];
    if (v === undefined) throw new Error(`line ${line}: missing value after ${tokens[i - 1]}`);
    return v;
  };
  const add = (m: Matcher): void => {
    const neg = negate;
    rule.matchers.push(neg ? (p) => !m(p) : m);
    negate = false;
  };
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i];
    if (t === '!') {
      negate = true;
    } else if (t === '-p') {
      const proto = take(++i);
      add((p) => (p.proto ?? 'tcp') === proto);
    } else if (t === '--dport') {
      const port = Number(take(++i));
      assert.ok(Number.isInteger(port) && port >= 1 && port <= 65535, `line ${line}: bad port`);
      // iptables requires -p tcp before --dport.
      assert.ok(tokens.slice(0, i).includes('-p'), `line ${line}: --dport without -p`);
      add((p) => p.dport === port);
    } else if (t === '-d') {
      const cidr = take(++i);
      assert.match(cidr, /^\d+\.\d+\.\d+\.\d+\/\d+$/, `line ${line}: bad -d`);
      add((p) => inCidr(p.dst, cidr));
    } else if (t === '-o') {
      assert.equal(chain === 'PREROUTING', false, `line ${line}: -o is invalid in PREROUTING`);
      const iface = take(++i);
      add((p) => p.outIface === iface);
    } else if (t === '-m') {
      assert.equal(take(++i), 'owner', `line ${line}: unknown match module`);
      ownerLoaded = true;
    } else if (t === '--uid-owner') {
      assert.ok(ownerLoaded, `line ${line}: --uid-owner without -m owner`);
      const uid = Number(take(++i));
      add((p) => p.uid === uid);
    } else if (t === '-j') {
      rule.target = take(++i);
    } else if (t === '--to-ports') {
      assert.equal(rule.target, 'REDIRECT', `line ${line}: --to-ports without REDIRECT`);
      rule.toPort = Number(take(++i));
    } else {
      throw new Error(`line ${line}: the interpreter does not know ${JSON.stringify(t)} in ${text}`);
    }
  }
  assert.equal(negate, false, `line ${line}: dangling !`);
  assert.notEqual(rule.target, '', `line ${line}: no -j`);
  if (rule.target === 'REDIRECT') assert.ok(rule.toPort !== undefined, `line ${line}: REDIRECT without port`);
  return rule;
}

function parse(rules: string): Table {
  const lines = rules.split('\n');
  const table: Table = { policies: new Map(), chains: new Map() };
  assert.equal(lines[0], '*nat', 'first line selects the nat table');
  const meaningful = lines.map((l, i) => ({ l, i: i + 1 })).filter(({ l }) => l !== '' && !l.startsWith('#'));
  assert.equal(meaningful.at(-1)?.l, 'COMMIT', 'COMMIT ends the input');
  assert.equal(meaningful.filter(({ l }) => l === 'COMMIT').length, 1);
  for (const { l, i } of meaningful.slice(1, -1)) {
    const decl = /^:(\S+) (\S+) \[0:0\]$/.exec(l);
    if (decl) {
      const [, name = '', policy = ''] = decl;
      assert.ok(!table.chains.has(name), `line ${i}: chain ${name} declared twice`);
      table.policies.set(name, policy);
      table.chains.set(name, []);
      continue;
    }
    const tokens = l.split(' ');
    assert.equal(tokens[0], '-A', `line ${i}: unexpected ${l}`);
    const chain = tokens[1] ?? '';
    const list = table.chains.get(chain);
    assert.ok(list, `line ${i}: append to undeclared chain ${chain}`);
    list.push(parseRule(chain, tokens.slice(2), i, l));
  }
  for (const list of table.chains.values())
    for (const r of list)
      if (!['RETURN', 'ACCEPT', 'REDIRECT'].includes(r.target))
        assert.ok(table.chains.has(r.target), `line ${r.line}: jump to undeclared chain ${r.target}`);
  return table;
}

/** Evaluates a packet like the kernel's nat table would, recording the rules that matched. */
function evaluate(table: Table, p: Packet, hits: Set<number>): Verdict {
  const run = (chain: string, depth: number): Verdict | 'RETURN' => {
    assert.ok(depth < 10, 'jump loop');
    for (const rule of table.chains.get(chain) ?? []) {
      if (!rule.matchers.every((m) => m(p))) continue;
      hits.add(rule.line);
      if (rule.target === 'RETURN') return 'RETURN';
      if (rule.target === 'ACCEPT') return { action: 'ACCEPT' };
      if (rule.target === 'REDIRECT') return { action: 'REDIRECT', port: rule.toPort ?? 0 };
      const r = run(rule.target, depth + 1);
      if (r !== 'RETURN') return r;
    }
    return 'RETURN';
  };
  const r = run(p.hook, 0);
  // Falling off (or RETURN from) a built-in chain applies its policy: ACCEPT, unchanged.
  assert.equal(table.policies.get(p.hook), 'ACCEPT');
  return r === 'RETURN' ? { action: 'ACCEPT' } : r;
}

const POD_IP = '10.244.1.7';
const APP_UID = 1000;
const PROXY = 1500;
const toInbound: Verdict = { action: 'REDIRECT', port: 15003 };
const toOutbound: Verdict = { action: 'REDIRECT', port: 15001 };
const untouched: Verdict = { action: 'ACCEPT' };

const inbound = (dport: number, proto: 'tcp' | 'udp' = 'tcp'): Packet => ({
  hook: 'PREROUTING',
  proto,
  dst: POD_IP,
  dport,
});
const outbound = (uid: number, dst: string, dport: number, outIface = 'eth0'): Packet => ({
  hook: 'OUTPUT',
  proto: 'tcp',
  dst,
  dport,
  uid,
  outIface,
});

const exclusions: Exclusions = parseExclusions({
  'skein.dev/outbound-port-exclusion-list': '5432, 6379',
  'skein.dev/inbound-port-exclusion-list': '8443',
  'skein.dev/outbound-ip-range-exclusion-list': '10.96.0.0/12,169.254.169.254',
});

const cases: { name: string; packet: Packet; verdict: Verdict }[] = [
  { name: 'inbound to app port 8080 → inbound listener', packet: inbound(8080), verdict: toInbound },
  { name: 'inbound to 15003 itself → inbound listener', packet: inbound(15003), verdict: toInbound },
  {
    name: 'inbound to the outbound listener 15001 → inbound listener (no open relay)',
    packet: inbound(15001),
    verdict: toInbound,
  },
  { name: 'inbound Prometheus scrape 15010 → proxy directly', packet: inbound(15010), verdict: untouched },
  {
    name: "kubelet probing Envoy's readiness 15900 → proxy directly",
    packet: inbound(15900),
    verdict: untouched,
  },
  { name: 'kubelet liveness probe 15901 → proxy directly', packet: inbound(15901), verdict: untouched },
  { name: 'kubelet readiness probe 15902 → proxy directly', packet: inbound(15902), verdict: untouched },
  { name: 'kubelet startup probe 15903 → proxy directly', packet: inbound(15903), verdict: untouched },
  { name: 'inbound excluded port 8443 → app directly', packet: inbound(8443), verdict: untouched },
  { name: 'inbound UDP → untouched', packet: inbound(8080, 'udp'), verdict: untouched },
  {
    name: 'app outbound to 10.1.2.3:80 → outbound listener',
    packet: outbound(APP_UID, '10.1.2.3', 80),
    verdict: toOutbound,
  },
  { name: 'outbound from uid 1500 → RETURN', packet: outbound(PROXY, '10.1.2.3', 80), verdict: untouched },
  {
    name: 'proxy ADS to the controller 15128 → RETURN (uid)',
    packet: outbound(PROXY, '10.0.3.4', 15128),
    verdict: untouched,
  },
  {
    name: 'proxy to its local app on 127.0.0.1 → RETURN',
    packet: outbound(PROXY, '127.0.0.1', 8080, 'lo'),
    verdict: untouched,
  },
  {
    name: 'proxy to its own pod IP (service backed by this pod) → inbound listener',
    packet: outbound(PROXY, POD_IP, 8080, 'lo'),
    verdict: toInbound,
  },
  {
    name: 'app outbound to 127.0.0.1 → RETURN',
    packet: outbound(APP_UID, '127.0.0.1', 9999, 'lo'),
    verdict: untouched,
  },
  {
    name: 'app to the admin port 127.0.0.1:15000 → RETURN',
    packet: outbound(APP_UID, '127.0.0.1', 15000, 'lo'),
    verdict: untouched,
  },
  {
    name: 'app to its own pod IP over lo → RETURN',
    packet: outbound(APP_UID, POD_IP, 8080, 'lo'),
    verdict: untouched,
  },
  {
    name: 'excluded port 5432 → RETURN before redirect',
    packet: outbound(APP_UID, '10.1.2.3', 5432),
    verdict: untouched,
  },
  { name: 'excluded port 6379 → RETURN', packet: outbound(APP_UID, '10.1.2.3', 6379), verdict: untouched },
  {
    name: 'excluded range 10.96.0.0/12 (10.100.0.1) → RETURN',
    packet: outbound(APP_UID, '10.100.0.1', 80),
    verdict: untouched,
  },
  {
    name: 'just outside the excluded range (10.112.0.1) → outbound listener',
    packet: outbound(APP_UID, '10.112.0.1', 80),
    verdict: toOutbound,
  },
  {
    name: 'bare IP exclusion 169.254.169.254 → RETURN',
    packet: outbound(APP_UID, '169.254.169.254', 80),
    verdict: untouched,
  },
  {
    name: 'inbound exclusion does not leak into outbound (8443 out → redirected)',
    packet: outbound(APP_UID, '10.1.2.3', 8443),
    verdict: toOutbound,
  },
  {
    name: 'outbound UDP (DNS) → untouched',
    packet: { hook: 'OUTPUT', proto: 'udp', dst: '10.96.0.10', dport: 53, uid: APP_UID, outIface: 'eth0' },
    verdict: untouched,
  },
];

const probePorts = [PORT_LIVENESS_PROBE, PORT_READINESS_PROBE, PORT_STARTUP_PROBE];

test('rendered rules give every packet its intended verdict, and every rule is needed by some case', () => {
  // The native layout's port set (Envoy's readiness port too): every rule of the classic one and one more.
  const rules = renderIptablesRules({
    exclusions,
    proxyServedPorts: defaultProxyServedPorts(probePorts, true),
  });
  const table = parse(rules);
  const hits = new Set<number>();
  for (const c of cases) assert.deepEqual(evaluate(table, c.packet, hits), c.verdict, c.name);
  const lines = rules.split('\n');
  const unused = lines
    .map((l, i) => ({ l, n: i + 1 }))
    .filter(({ l, n }) => l.startsWith('-A') && !hits.has(n));
  assert.deepEqual(unused, [], 'rules no case exercises');
});

test('without exclusion annotations the same ports are intercepted', () => {
  const table = parse(renderIptablesRules({ exclusions: NO_EXCLUSIONS, proxyServedPorts: [15010] }));
  const hits = new Set<number>();
  assert.deepEqual(evaluate(table, outbound(APP_UID, '10.1.2.3', 5432), hits), toOutbound);
  assert.deepEqual(evaluate(table, outbound(APP_UID, '10.100.0.1', 80), hits), toOutbound);
  assert.deepEqual(evaluate(table, inbound(8443), hits), toInbound);
  // Probe ports are only excluded when probes were rewritten to them.
  assert.deepEqual(evaluate(table, inbound(15901), hits), toInbound);
  // Envoy's readiness port only when the Envoy container is probed (the native layout).
  assert.deepEqual(evaluate(table, inbound(15900), hits), toInbound);
});

test("Envoy's readiness port is exempt only when asked for; the classic port list is unchanged", () => {
  assert.deepEqual(defaultProxyServedPorts([15902]), [15010, 15902]);
  assert.deepEqual(defaultProxyServedPorts([15902], true), [15010, 15900, 15902]);
  const classic = renderIptablesRules({
    exclusions: NO_EXCLUSIONS,
    proxyServedPorts: defaultProxyServedPorts([]),
  });
  assert.ok(!classic.includes('--dport 15900'));
  const native = parse(
    renderIptablesRules({ exclusions: NO_EXCLUSIONS, proxyServedPorts: defaultProxyServedPorts([], true) }),
  );
  assert.deepEqual(evaluate(native, inbound(15900), new Set()), untouched);
});

test('the rules use skein chains, replace the nat table and end with COMMIT', () => {
  const rules = renderIptablesRules({ exclusions: NO_EXCLUSIONS, proxyServedPorts: [15010] });
  const lines = rules.split('\n');
  for (const chain of [
    'SKEIN_PROXY_INBOUND',
    'SKEIN_PROXY_IN_REDIRECT',
    'SKEIN_PROXY_OUTBOUND',
    'SKEIN_PROXY_REDIRECT',
  ])
    assert.ok(lines.includes(`:${chain} - [0:0]`), chain);
  assert.ok(lines.includes('-A SKEIN_PROXY_OUTBOUND -m owner --uid-owner 1500 -j RETURN'));
  assert.equal(lines.filter((l) => l.startsWith('-A PREROUTING')).length, 1);
  assert.equal(lines.filter((l) => l.startsWith('-A OUTPUT')).length, 1);
  assert.equal(rules.trimEnd().split('\n').at(-1), 'COMMIT');
});

test('exclusion annotations: invalid values name the annotation and the value', () => {
  const bad: [string, string, RegExp][] = [
    [
      'skein.dev/outbound-port-exclusion-list',
      '0',
      /outbound-port-exclusion-list: "0" is not a port in 1-65535/,
    ],
    ['skein.dev/outbound-port-exclusion-list', '80,65536', /"65536" is not a port in 1-65535/],
    [
      'skein.dev/inbound-port-exclusion-list',
      'http',
      /inbound-port-exclusion-list: "http" is not a port number/,
    ],
    ['skein.dev/inbound-port-exclusion-list', '8000-8100', /"8000-8100" is not a port number/],
    ['skein.dev/inbound-port-exclusion-list', '0x50', /"0x50" is not a port number/],
    [
      'skein.dev/outbound-ip-range-exclusion-list',
      '10.0.0.0/33',
      /ip-range-exclusion-list: "10.0.0.0\/33" has a prefix/,
    ],
    ['skein.dev/outbound-ip-range-exclusion-list', '300.1.1.1/8', /"300.1.1.1\/8" is not an IPv4 address/],
    ['skein.dev/outbound-ip-range-exclusion-list', 'fd00::/8', /"fd00::\/8" is IPv6/],
    ['skein.dev/outbound-ip-range-exclusion-list', '10.0.0.0/', /has a prefix length/],
    ['skein.dev/outbound-ip-range-exclusion-list', 'example.com', /is not an IPv4 address/],
  ];
  for (const [annotation, value, message] of bad)
    assert.throws(() => parseExclusions({ [annotation]: value }), { name: 'InjectionError', message }, value);
});

test('exclusion annotations: spaces, empty entries and duplicates are tolerated', () => {
  assert.deepEqual(
    parseExclusions({
      'skein.dev/outbound-port-exclusion-list': ' 5432 ,, 5432, 6379,',
      'skein.dev/outbound-ip-range-exclusion-list': '10.0.0.0/8, 192.168.1.1',
    }),
    { outboundPorts: [5432, 6379], inboundPorts: [], outboundIpRanges: ['10.0.0.0/8', '192.168.1.1/32'] },
  );
  assert.deepEqual(parseExclusions(undefined), NO_EXCLUSIONS);
});

// Inclusion lists (OSM v1.2's outboundIPRangeInclusionList): only the listed
// destinations jump to the proxy; exclusions still RETURN first, so they win.
const withInclusions: Exclusions = {
  outboundPorts: [5432],
  inboundPorts: [],
  outboundIpRanges: ['10.96.0.10/32'],
  outboundIpRangeInclusions: ['10.96.0.0/12', '10.244.0.0/16'],
};

const inclusionCases: { name: string; packet: Packet; verdict: Verdict }[] = [
  {
    name: 'app to an included range (a Service IP) → outbound listener',
    packet: outbound(APP_UID, '10.96.5.5', 80),
    verdict: toOutbound,
  },
  {
    name: 'app to the second included range (another pod) → outbound listener',
    packet: outbound(APP_UID, '10.244.2.9', 8080),
    verdict: toOutbound,
  },
  {
    name: 'app to an address outside every included range → leaves directly',
    packet: outbound(APP_UID, '203.0.113.7', 443),
    verdict: untouched,
  },
  {
    name: 'an excluded address inside an included range → excluded wins',
    packet: outbound(APP_UID, '10.96.0.10', 80),
    verdict: untouched,
  },
  {
    name: 'an excluded port to an included range → excluded wins',
    packet: outbound(APP_UID, '10.96.5.5', 5432),
    verdict: untouched,
  },
  {
    name: "the proxy's own traffic (ADS) outside the included ranges → RETURN by uid",
    packet: outbound(PROXY, '192.0.2.1', 15128),
    verdict: untouched,
  },
  {
    name: 'the proxy to its own pod IP still reaches the inbound listener',
    packet: outbound(PROXY, POD_IP, 8080, 'lo'),
    verdict: toInbound,
  },
  {
    name: 'app to itself over lo → RETURN',
    packet: outbound(APP_UID, '127.0.0.1', 15000, 'lo'),
    verdict: untouched,
  },
  { name: 'inbound is unaffected by an outbound inclusion list', packet: inbound(8080), verdict: toInbound },
  { name: 'kubelet probes still reach the proxy directly', packet: inbound(15902), verdict: untouched },
  { name: 'Prometheus still scrapes the proxy directly', packet: inbound(15010), verdict: untouched },
];

test('an inclusion list: only its ranges are redirected, exclusions first, every rule needed', () => {
  const rules = renderIptablesRules({ exclusions: withInclusions, proxyServedPorts: [15010, 15902] });
  const table = parse(rules);
  const hits = new Set<number>();
  for (const c of inclusionCases) assert.deepEqual(evaluate(table, c.packet, hits), c.verdict, c.name);
  const lines = rules.split('\n');
  const unused = lines
    .map((l, i) => ({ l, n: i + 1 }))
    .filter(({ l, n }) => l.startsWith('-A') && !hits.has(n));
  assert.deepEqual(unused, [], 'rules no case exercises');
  // No catch-all redirect: what no inclusion matches falls off the chain.
  assert.ok(!lines.includes('-A SKEIN_PROXY_OUTBOUND -p tcp -j SKEIN_PROXY_REDIRECT'));
  // Every exclusion RETURN comes before the first inclusion jump.
  const outbound = lines.filter((l) => l.startsWith('-A SKEIN_PROXY_OUTBOUND'));
  const lastReturn = outbound.findLastIndex((l) => l.endsWith('-j RETURN'));
  const firstJump = outbound.findIndex((l) => l.endsWith('-j SKEIN_PROXY_REDIRECT'));
  assert.ok(lastReturn < firstJump, outbound.join('\n'));
});

test('an empty inclusion list is no inclusion list: everything is redirected', () => {
  const rules = renderIptablesRules({
    exclusions: { ...NO_EXCLUSIONS, outboundIpRangeInclusions: [] },
    proxyServedPorts: [15010],
  });
  assert.equal(rules, renderIptablesRules({ exclusions: NO_EXCLUSIONS, proxyServedPorts: [15010] }));
  assert.deepEqual(evaluate(parse(rules), outbound(APP_UID, '203.0.113.7', 443), new Set()), toOutbound);
});
