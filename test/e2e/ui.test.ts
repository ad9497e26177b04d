// The web view in real headless Chromium (Debian's package, driven by
// playwright-core) against the real controller in local mode on a copy of the
// bookstore example: the mesh renders, a TrafficTarget written to disk appears
// without a reload, Egress and IngressBackend + Ingress objects appear, change
// and go as nodes and edges outside the mesh, a proxy's colour follows its xDS
// stream, and clicking a service opens its policies. Leaves
// test-results/ui.png and ui-outside.png to look at.
//
// Page-side expressions are strings: this file is type-checked without the DOM
// library, and what they return is checked here at run time.
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type Browser, chromium, type Page } from 'playwright-core';
import { BuiltinCA } from '../../pkg/certificate/builtin.js';
import { LocalMesh, repoRoot } from '../support/local-mesh.js';
import { MetricsClient } from '../support/metrics-client.js';

const CHROMIUM = '/usr/bin/chromium';
// The page's colours (pkg/ui/web/style.ts), as cytoscape reports a node's style.
const GREEN = 'rgb(46,157,79)';
const GREY = 'rgb(154,160,166)';
const V1_PROXY = 'px:svc:bookstore/bookstore-v1:bookstore/bookstore-v1';
const THIEF_EDGE = 'allow:svc:bookthief/bookthief->svc:bookstore/bookstore';

const THIEF_ACCESS = `apiVersion: access.smi-spec.io/v1alpha3
kind: TrafficTarget
metadata:
  name: bookthief-access-bookstore
  namespace: bookstore
spec:
  destination: { kind: ServiceAccount, name: bookstore, namespace: bookstore }
  sources: [{ kind: ServiceAccount, name: bookthief, namespace: bookthief }]
  rules:
    - kind: HTTPRouteGroup
      name: bookstore-service-routes
      matches: [all]
`;

function strings(v: unknown): string[] {
  assert.ok(
    Array.isArray(v) && v.every((x) => typeof x === 'string'),
    `not a string list: ${JSON.stringify(v)}`,
  );
  return v;
}

describe('web view in headless Chromium', () => {
  let mesh: LocalMesh;
  let browser: Browser;
  let page: Page;
  const pageErrors: string[] = [];

  /** Runs a page-side expression; `cy` is the page's cytoscape instance. */
  const q = (expr: string): Promise<unknown> =>
    page.evaluate(`(() => { const cy = window.skeinGraph.cy; return ${expr}; })()`);
  const waitFor = (expr: string, ms = 10_000) =>
    page.waitForFunction(`(() => { const cy = window.skeinGraph?.cy; return cy && (${expr}); })()`, null, {
      timeout: ms,
      polling: 50,
    });
  const proxy = async (id: string) => {
    const v = await q(
      `(n => n.empty() ? null : [n.data('state'), n.style('background-color')])(cy.getElementById(${JSON.stringify(id)}))`,
    );
    return v === null ? undefined : strings(v);
  };

  before(async () => {
    [mesh, browser] = await Promise.all([LocalMesh.start(), chromium.launch({ executablePath: CHROMIUM })]);
    page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    page.on('pageerror', (e) => pageErrors.push(e.message));
    await page.goto(`http://127.0.0.1:${mesh.ports.http}/ui/`);
    await waitFor('window.skeinGraph.updates > 0');
  });
  after(async () => {
    await browser?.close();
    await mesh?.stop();
  });

  test('the bookstore example renders: services by namespace, policy and split edges, header and legend', async () => {
    const nodes = strings(await q(`cy.nodes().map(n => n.id())`));
    for (const id of [
      'ns:bookstore',
      'svc:bookstore/bookstore',
      'svc:bookstore/bookstore-v1',
      'svc:bookstore/bookstore-v2',
      'svc:bookbuyer/bookbuyer',
      'svc:bookthief/bookthief',
      'svc:bookwarehouse/bookwarehouse',
      V1_PROXY,
    ])
      assert.ok(nodes.includes(id), `${id} not among ${nodes.join(' ')}`);
    // Drawn, inside their namespace, on screen.
    assert.equal(await q(`cy.getElementById('svc:bookstore/bookstore-v1').parent().id()`), 'ns:bookstore');
    const box = await q(
      `(b => [b.x1, b.y1, b.w, b.h])(cy.getElementById('svc:bookstore/bookstore').renderedBoundingBox())`,
    );
    assert.ok(Array.isArray(box) && box.every((n) => typeof n === 'number' && n >= 0), JSON.stringify(box));
    assert.deepEqual(strings(await q(`cy.edges().map(e => e.id() + ' ' + e.data('label'))`)).sort(), [
      'allow:svc:bookbuyer/bookbuyer->svc:bookstore/bookstore bookbuyer-access-bookstore',
      'allow:svc:bookbuyer/bookbuyer->svc:bookstore/bookstore-v1 bookbuyer-access-bookstore',
      'allow:svc:bookbuyer/bookbuyer->svc:bookstore/bookstore-v2 bookbuyer-access-bookstore',
      'allow:svc:bookstore/bookstore-v1->svc:bookwarehouse/bookwarehouse bookstore-access-bookwarehouse',
      'allow:svc:bookstore/bookstore-v2->svc:bookwarehouse/bookwarehouse bookstore-access-bookwarehouse',
      // The example's Egress (egress.yaml) and IngressBackend + Ingress (ingress.yaml).
      'egress:svc:bookbuyer/bookbuyer->ext:host:covers.example.com https 443 · book-covers',
      'ingress:in:ip:10.10.0.0/16->svc:bookstore/bookstore-v1 http · bookstore.example.com',
      'split:svc:bookstore/bookstore->svc:bookstore/bookstore-v1 weight 75 (75%)',
      'split:svc:bookstore/bookstore->svc:bookstore/bookstore-v2 weight 25 (25%)',
    ]);
    // Outside the mesh, in their own boxes and shapes.
    assert.deepEqual(
      await q(
        `['ext:host:covers.example.com', 'in:ip:10.10.0.0/16'].map(id => (n => [n.parent().id(), n.style('shape')])(cy.getElementById(id)))`,
      ),
      [
        ['zone:egress', 'round-hexagon'],
        ['zone:ingress', 'round-tag'],
      ],
    );
    // No proxy has connected: every one is grey.
    assert.deepEqual(await proxy(V1_PROXY), ['DISCONNECTED', GREY]);
    assert.equal(await page.locator('#mesh-name').textContent(), 'skein');
    assert.match((await page.locator('#mode').textContent()) ?? '', /SMI mode/);
    assert.match(
      (await page.locator('#counts').textContent()) ?? '',
      /4 namespaces · 6 services · 5 proxies/,
    );
    assert.match((await page.locator('#live').textContent()) ?? '', /live/);
    assert.ok(await page.locator('#legend').isVisible());
    assert.ok(await page.locator('#permissive-note').isHidden());
    assert.deepEqual(pageErrors, []);
  });

  test('a TrafficTarget written to the watched directory appears as an edge, without reload or re-layout', async () => {
    await q(`(window.skeinMarker = 'same page', 0)`);
    const layouts = await q('window.skeinGraph.layouts');
    const before = await q(`cy.getElementById('svc:bookstore/bookstore').position()`);
    await mesh.writeManifest('thief-access.yaml', THIEF_ACCESS);
    await waitFor(`cy.getElementById(${JSON.stringify(THIEF_EDGE)}).nonempty()`);
    assert.equal(
      await q(`cy.getElementById(${JSON.stringify(THIEF_EDGE)}).data('label')`),
      'bookthief-access-bookstore',
    );
    assert.equal(await q('window.skeinMarker'), 'same page');
    // Only an edge was added: nothing moved.
    assert.equal(await q('window.skeinGraph.layouts'), layouts);
    assert.deepEqual(await q(`cy.getElementById('svc:bookstore/bookstore').position()`), before);
    await mesh.removeManifest('thief-access.yaml');
    await waitFor(`cy.getElementById(${JSON.stringify(THIEF_EDGE)}).empty()`);
  });

  /** A real mouse click on the middle of an edge (or a node's centre), then waits for the selection. */
  /**
   * Where an element is drawn on the page now: a node's centre; for an edge,
   * the point `along` the way from its source to its target end (0.5: the middle).
   */
  const pointOf = async (id: string, along = 0.5): Promise<[number, number]> => {
    const at = await q(`(() => {
      const el = cy.getElementById(${JSON.stringify(id)});
      let p = el.renderedPosition?.();
      if (el.isEdge() && ${along} === 0.5) p = el.renderedMidpoint();
      else if (el.isEdge()) {
        const s = el.renderedSourceEndpoint(), t = el.renderedTargetEndpoint();
        p = { x: s.x + (t.x - s.x) * ${along}, y: s.y + (t.y - s.y) * ${along} };
      }
      const c = cy.container().getBoundingClientRect();
      return [c.left + p.x, c.top + p.y];
    })()`);
    assert.ok(Array.isArray(at) && typeof at[0] === 'number' && typeof at[1] === 'number');
    return [at[0], at[1]];
  };
  /**
   * Clicks an element as a person would, once it stopped moving: a new
   * element is fitted in with an animated layout, and a click aimed at where
   * it was a moment ago lands on empty canvas (a loaded machine draws slower).
   * An edge whose middle lies under a node is clicked further along it, as a
   * person would.
   */
  const click = async (id: string) => {
    let at = await pointOf(id);
    for (let settled = 0, tries = 0; settled < 2 && tries < 50; tries++) {
      await new Promise((r) => setTimeout(r, 100));
      const now = await pointOf(id);
      settled = Math.hypot(now[0] - at[0], now[1] - at[1]) < 0.5 ? settled + 1 : 0;
      at = now;
    }
    // A person scrolls to what lies outside the window: here the graph is fitted to it.
    const view = page.viewportSize();
    if (view && (at[0] < 0 || at[1] < 0 || at[0] > view.width || at[1] > view.height)) {
      await q('(cy.fit(undefined, 30), 0)');
      at = await pointOf(id);
    }
    const isEdge = (await q(`cy.getElementById(${JSON.stringify(id)}).isEdge()`)) === true;
    const wanted = `window.skeinGraph.selected === ${JSON.stringify(id)}`;
    for (const along of isEdge ? [0.5, 0.35, 0.65, 0.2, 0.8] : [0.5]) {
      if (along !== 0.5) at = await pointOf(id, along);
      await page.mouse.click(at[0], at[1]);
      if (
        await waitFor(wanted, 3_000).then(
          () => true,
          () => false,
        )
      )
        break;
    }
    await waitFor(wanted).catch(async (err: unknown) => {
      // Say what the click hit instead, so a crowded layout is told from a broken panel.
      const selected = await q('window.skeinGraph.selected ?? null');
      throw new Error(
        `clicking ${id} at ${JSON.stringify(at)} selected ${JSON.stringify(selected)}: ${String(err)}`,
      );
    });
    return (await page.locator('#panel').textContent()) ?? '';
  };
  const label = (id: string) => q(`cy.getElementById(${JSON.stringify(id)}).data('label') ?? null`);

  test('an Egress appears as destinations outside the mesh, follows an edit, and goes when deleted', async () => {
    const egress = (host: string) => `apiVersion: policy.skein.dev/v1alpha1
kind: Egress
metadata: { name: thief-out, namespace: bookthief }
spec:
  sources: [{ kind: ServiceAccount, name: bookthief, namespace: bookthief }]
  hosts: [${host}]
  ipAddresses: [10.20.0.0/16]
  ports: [{ number: 80, protocol: http }, { number: 5432, protocol: tcp }]
`;
    const hostEdge = (host: string) => `egress:svc:bookthief/bookthief->ext:host:${host}`;
    const cidrEdge = 'egress:svc:bookthief/bookthief->ext:cidr:10.20.0.0/16';
    await mesh.writeManifest('thief-egress.yaml', egress('api.example.org'));
    await waitFor(`cy.getElementById(${JSON.stringify(hostEdge('api.example.org'))}).nonempty()`);
    // http is told by Host (a host node), tcp by address (a range node).
    assert.equal(await label(hostEdge('api.example.org')), 'http 80 · thief-out');
    assert.equal(await label(cidrEdge), 'tcp 5432 · thief-out');
    assert.equal(await q(`cy.getElementById('ext:host:api.example.org').parent().id()`), 'zone:egress');
    assert.equal(await q(`cy.getElementById('ext:host:api.example.org').style('shape')`), 'round-hexagon');
    const panel = await click(hostEdge('api.example.org'));
    assert.match(panel, /Egress: allowed out of the mesh/);
    assert.match(panel, /bookthief\/bookthief → api\.example\.org/);
    assert.match(panel, /80\s*http\s*10\.20\.0\.0\/16\s*all requests\s*bookthief\/thief-out/);
    const node = await click('ext:host:api.example.org');
    assert.match(node, /Who may reach it/);
    assert.match(node, /bookthief\/bookthief \(http 80 · thief-out\)/);
    assert.match((await page.locator('#counts').textContent()) ?? '', /· 3 egress · 1 ingress/);

    // An edit: the old host's node and edge go, the new one's come, the range stays.
    await mesh.writeManifest('thief-egress.yaml', egress('api2.example.org'));
    await waitFor(`cy.getElementById(${JSON.stringify(hostEdge('api2.example.org'))}).nonempty()`);
    assert.equal(await q(`cy.getElementById('ext:host:api.example.org').empty()`), true);
    assert.equal(await q(`cy.getElementById(${JSON.stringify(hostEdge('api.example.org'))}).empty()`), true);
    assert.equal(await label(cidrEdge), 'tcp 5432 · thief-out');
    // The selected node went: the panel says so instead of showing stale policy.
    assert.match((await page.locator('#panel').textContent()) ?? '', /no longer in the mesh/);

    await mesh.removeManifest('thief-egress.yaml');
    await waitFor(`cy.getElementById(${JSON.stringify(cidrEdge)}).empty()`);
    assert.deepEqual(strings(await q(`cy.nodes('[kind = "external"]').map(n => n.id())`)), [
      'ext:host:covers.example.com',
    ]);
    assert.deepEqual(pageErrors, []);
  });

  test('an IngressBackend + Ingress appear as an ingress source and edge, follow edits of either, and go when deleted', async () => {
    const warehousePort = mesh.port(14031);
    const backend = (protocol: string, tls: string) => `apiVersion: policy.skein.dev/v1alpha1
kind: IngressBackend
metadata: { name: warehouse-in, namespace: bookwarehouse }
spec:
  backends: [{ name: bookwarehouse, port: { number: ${warehousePort}, protocol: ${protocol} }${tls} }]
  sources: [{ kind: IPRange, name: 10.30.0.0/16 }]
`;
    const ingress = `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: { name: warehouse-in, namespace: bookwarehouse }
spec:
  rules:
    - host: warehouse.example.com
      http:
        paths:
          - path: /skein.Warehouse
            pathType: Prefix
            backend: { service: { name: bookwarehouse, port: { number: ${mesh.port(14001)} } } }
`;
    const edge = 'ingress:in:ip:10.30.0.0/16->svc:bookwarehouse/bookwarehouse';
    await mesh.writeManifest('warehouse-in.yaml', `${backend('http', '')}---\n${ingress}`);
    await waitFor(
      `cy.getElementById(${JSON.stringify(edge)}).data('label') === 'http · warehouse.example.com/skein.Warehouse'`,
    );
    assert.equal(await q(`cy.getElementById('in:ip:10.30.0.0/16').parent().id()`), 'zone:ingress');
    assert.equal(await q(`cy.getElementById('in:ip:10.30.0.0/16').style('shape')`), 'round-tag');
    let panel = await click(edge);
    assert.match(panel, /Ingress: admitted into the mesh/);
    assert.match(panel, /10\.30\.0\.0\/16 → bookwarehouse\/bookwarehouse/);
    assert.match(
      panel,
      new RegExp(
        `${warehousePort}\\s*http\\s*warehouse\\.example\\.com /skein\\.Warehouse \\(prefix\\)\\s*bookwarehouse/warehouse-in`,
      ),
    );
    assert.match(panel, /Ingress: bookwarehouse\/warehouse-in/);

    // https without client certificates: the label and the open panel follow.
    await mesh.writeManifest(
      'warehouse-in.yaml',
      `${backend('https', ', tls: { skipClientCertValidation: true }')}---\n${ingress}`,
    );
    await waitFor(
      `cy.getElementById(${JSON.stringify(edge)}).data('label') === 'https (no client cert) · warehouse.example.com/skein.Warehouse'`,
    );
    panel = (await page.locator('#panel').textContent()) ?? '';
    assert.match(panel, /https \(no client cert\)/);
    assert.match(panel, /client certificate SANs: not checked/);
    await mkdir(path.join(repoRoot, 'test-results'), { recursive: true });
    await page.screenshot({ path: path.join(repoRoot, 'test-results', 'ui-outside.png') });

    // Without its Ingress, every host and path is admitted again.
    await mesh.writeManifest(
      'warehouse-in.yaml',
      backend('https', ', tls: { skipClientCertValidation: true }'),
    );
    await waitFor(`cy.getElementById(${JSON.stringify(edge)}).data('label') === 'https (no client cert)'`);

    await mesh.removeManifest('warehouse-in.yaml');
    await waitFor(`cy.getElementById('in:ip:10.30.0.0/16').empty()`);
    assert.equal(await q(`cy.getElementById(${JSON.stringify(edge)}).empty()`), true);
    assert.deepEqual(strings(await q(`cy.nodes('[kind = "ingress-source"]').map(n => n.id())`)), [
      'in:ip:10.10.0.0/16',
    ]);
    assert.deepEqual(pageErrors, []);
  });

  test('an Ingress no IngressBackend backs draws nothing and shows as a problem; an Egress edge with a problem turns red', async () => {
    const problems = page.locator('#problems');
    await mesh.writeManifest(
      'orphan.yaml',
      `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: { name: orphan, namespace: bookwarehouse }
spec:
  defaultBackend: { service: { name: bookwarehouse, port: { number: ${mesh.port(14001)} } } }
---
apiVersion: policy.skein.dev/v1alpha1
kind: Egress
metadata: { name: zz-covers-tcp, namespace: bookbuyer }
spec:
  sources: [{ kind: ServiceAccount, name: bookbuyer, namespace: bookbuyer }]
  ipAddresses: [10.40.0.0/16]
  ports: [{ number: 443, protocol: tcp }, { number: 6379, protocol: tcp }]
`,
    );
    await problems.getByText('2 problems').waitFor({ timeout: 10_000 });
    const text = (await problems.textContent()) ?? '';
    assert.match(text, /Ingress bookwarehouse\/orphan: .*no IngressBackend admits a source/);
    // Port 443 is https for bookbuyer (book-covers, first by name): this tcp rule is dropped.
    assert.match(text, /Egress bookbuyer\/zz-covers-tcp: port 443 is https/);
    const redis = 'egress:svc:bookbuyer/bookbuyer->ext:cidr:10.40.0.0/16';
    await waitFor(`cy.getElementById(${JSON.stringify(redis)}).nonempty()`);
    assert.equal(await label(redis), 'tcp 6379 · zz-covers-tcp');
    assert.deepEqual(
      await q(
        `(e => [e.data('problem'), e.style('line-style'), e.style('line-color')])(cy.getElementById(${JSON.stringify(redis)}))`,
      ),
      ['yes', 'dotted', 'rgb(217,48,37)'],
    );
    assert.match(await click(redis), /Problems in force.*port 443 is https/s);
    assert.equal(
      await q(
        `cy.edges('[edgeKind = "ingress"]').filter(e => e.target().id() === 'svc:bookwarehouse/bookwarehouse').length`,
      ),
      0,
    );
    await mesh.removeManifest('orphan.yaml');
    await problems.waitFor({ state: 'hidden', timeout: 10_000 });
    await waitFor(`cy.getElementById(${JSON.stringify(redis)}).empty()`);
    assert.deepEqual(pageErrors, []);
  });

  test('an invalid manifest shows in the problems panel, live, and the panel goes when it is fixed', async () => {
    const problems = page.locator('#problems');
    assert.equal(await problems.isHidden(), true, 'no problems in the example');
    await mesh.writeManifest(
      'bad-split.yaml',
      'apiVersion: split.smi-spec.io/v1alpha2\nkind: TrafficSplit\nmetadata: {name: bad, namespace: bookstore}\n' +
        'spec:\n  service: bookstore\n  backends: [{service: bookstore-v1, weight: -1}]\n',
    );
    await problems.getByText('1 problem').waitFor({ timeout: 10_000 });
    const text = (await problems.textContent()) ?? '';
    assert.match(text, /TrafficSplit bookstore\/bad: .*weight/);
    assert.match(text, /in force: nothing: the object is ignored/);
    await mesh.removeManifest('bad-split.yaml');
    await problems.waitFor({ state: 'hidden', timeout: 10_000 });
  });

  test('a new service is fitted in around the others: they keep their places', async () => {
    const leaves = `Object.fromEntries(cy.nodes(':childless').map(n => [n.id(), n.position()]))`;
    const before = await q(leaves);
    const layouts = await q('window.skeinGraph.layouts');
    await mesh.writeManifest(
      'v3.yaml',
      `apiVersion: v1
kind: Service
metadata: { name: bookstore-v3, namespace: bookstore }
spec:
  selector: { app: bookstore, version: v3 }
  ports: [{ name: grpc-api, port: 14001, targetPort: grpc-api, appProtocol: grpc }]
`,
    );
    await waitFor(`cy.getElementById('svc:bookstore/bookstore-v3').nonempty()`);
    assert.equal(await q(`cy.getElementById('svc:bookstore/bookstore-v3').parent().id()`), 'ns:bookstore');
    assert.equal(await q('window.skeinGraph.layouts'), Number(layouts) + 1);
    // Let the (animated) layout finish, then compare every earlier node's place.
    await page.waitForTimeout(500);
    const after = await q(leaves);
    assert.ok(typeof before === 'object' && before !== null && typeof after === 'object' && after !== null);
    const moved = Object.entries(before).filter(([id, p]: [string, unknown]) => {
      const now: unknown = Reflect.get(after, id);
      const d = (k: string) =>
        Math.abs(Number(Reflect.get(Object(now), k)) - Number(Reflect.get(Object(p), k)));
      return !(d('x') < 0.5 && d('y') < 0.5);
    });
    assert.deepEqual(moved, [], 'earlier nodes moved');
    await mesh.removeManifest('v3.yaml');
    await waitFor(`cy.getElementById('svc:bookstore/bookstore-v3').empty()`);
    assert.deepEqual(pageErrors, []);
  });

  test('a proxy turns green once synced (its panel shows the versions ACKed) and grey when its workload goes away', async () => {
    const server = await mesh.startServer('bookstore', 'bookstore-v1', '127.0.0.21', 14021);
    await waitFor(`cy.getElementById(${JSON.stringify(V1_PROXY)}).data('state') === 'SYNCED'`);
    assert.deepEqual(await proxy(V1_PROXY), ['SYNCED', GREEN]);
    assert.match(
      (await page.locator('#counts').textContent()) ?? '',
      /\(1 synced, 0 stale, 0 nacked, 4 disconnected\)/,
    );
    // Clicking the proxy shows its config summary: per type, the version sent and ACKed.
    const at = await q(`(() => {
      const p = cy.getElementById(${JSON.stringify(V1_PROXY)}).renderedPosition();
      const c = cy.container().getBoundingClientRect();
      return [c.left + p.x, c.top + p.y];
    })()`);
    assert.ok(Array.isArray(at) && typeof at[0] === 'number' && typeof at[1] === 'number');
    await page.mouse.click(at[0], at[1]);
    await waitFor(`window.skeinGraph.selected === ${JSON.stringify(V1_PROXY)}`);
    const panel = (await page.locator('#panel').textContent()) ?? '';
    assert.match(panel, /identitybookstore\/bookstore/);
    // A proxyless gRPC server asks for its listener only (its routes come inline).
    assert.match(panel, /typesentackedstateLDS([0-9a-f]+)\1SYNCED/);
    assert.match(panel, /Who may call bookstore\/bookstore-v1/);
    await mkdir(path.join(repoRoot, 'test-results'), { recursive: true });
    await page.screenshot({ path: path.join(repoRoot, 'test-results', 'ui-synced.png') });
    await server.stop();
    await waitFor(`cy.getElementById(${JSON.stringify(V1_PROXY)}).data('state') === 'DISCONNECTED'`);
    assert.deepEqual(await proxy(V1_PROXY), ['DISCONNECTED', GREY]);
  });

  test('clicking a service opens its panel: who may call it, on which routes, its endpoints and proxies', async () => {
    // A real click, inside the service box's top padding (its proxies sit lower).
    const at = await q(`(() => {
      const b = cy.getElementById('svc:bookstore/bookstore').renderedBoundingBox({ includeLabels: false });
      const c = cy.container().getBoundingClientRect();
      return [c.left + (b.x1 + b.x2) / 2, c.top + b.y1 + 5];
    })()`);
    assert.ok(Array.isArray(at) && typeof at[0] === 'number' && typeof at[1] === 'number');
    await page.mouse.click(at[0], at[1]);
    await waitFor(`window.skeinGraph.selected === 'svc:bookstore/bookstore'`);
    const panel = page.locator('#panel');
    await panel.getByText('Who may call it').waitFor({ timeout: 5000 });
    const text = (await panel.textContent()) ?? '';
    assert.match(text, /bookstore\/bookstore/);
    assert.match(text, /from bookbuyer\/bookbuyer/);
    assert.match(text, /routes: \* \.\*/);
    assert.match(text, /TrafficTarget bookstore\/bookbuyer-access-bookstore/);
    assert.match(text, /TrafficSplit backends/);
    assert.match(text, /bookstore\/bookstore-v1\s*75\s*75%/);
    assert.match(text, /127\.0\.0\.21:\d+\s*bookstore-v1/);
    // The proxy that was connected in the previous test, with its config summary gone grey.
    assert.match(text, /DISCONNECTED\s*bookstore-v1/);
    await page.screenshot({ path: path.join(repoRoot, 'test-results', 'ui.png') });
    assert.deepEqual(pageErrors, []);
  });
  test('an edge shows the request rate and success rate its source’s proxies report, live, in its label, colour and panel', async () => {
    // A client certificate of bookbuyer's proxy from the controller's own CA, streaming as a
    // sidecar's stats sink does (real Envoy does it in test/sidecar/stats.test.ts).
    const ca = await BuiltinCA.loadOrCreate(path.join(mesh.stateDir, 'ca'));
    const cert = await ca.issue({
      commonName: '0b5c6a1e-0000-4000-8000-00000000a001.sidecar.bookbuyer.bookbuyer.cluster.local',
      validityMs: 3_600_000,
      usage: 'client',
    });
    const metrics = new MetricsClient(`127.0.0.1:${mesh.ports.ads}`, {
      caPem: ca.trustBundlePem,
      certPem: cert.certPem,
      keyPem: cert.keyPem,
    });
    const edge = 'allow:svc:bookbuyer/bookbuyer->svc:bookstore/bookstore-v1';
    const cluster = 'bookstore/bookstore-v1|14001';
    try {
      assert.equal(await label(edge), 'bookbuyer-access-bookstore');
      metrics.send(cluster, 0, 0, 0); // the stream's baseline
      metrics.send(cluster, 600, 570, 30);
      await waitFor(
        `/ · [0-9.]+ rps · 95% ok$/.test(cy.getElementById(${JSON.stringify(edge)}).data('label'))`,
      );
      assert.match(String(await label(edge)), /^bookbuyer-access-bookstore · [0-9.]+ rps · 95% ok$/);
      assert.equal(await q(`cy.getElementById(${JSON.stringify(edge)}).data('health')`), 'degraded');
      const panel = await click(edge);
      assert.match(panel, /Traffic, last [0-9.]+ s/);
      assert.match(panel, /95%/);
      // More calls, most of them failing: the label, colour and open panel follow without a reload.
      metrics.send(cluster, 1000, 570, 430);
      await waitFor(
        `/ · [0-9.]+ rps · 57% ok$/.test(cy.getElementById(${JSON.stringify(edge)}).data('label'))`,
      );
      assert.equal(await q(`cy.getElementById(${JSON.stringify(edge)}).data('health')`), 'bad');
      assert.equal(await q(`cy.getElementById(${JSON.stringify(edge)}).style('color')`), 'rgb(198,40,40)');
      await page.waitForFunction(`document.querySelector('#panel').textContent.includes('57%')`, null, {
        timeout: 10_000,
      });
      // Other edges carry nothing.
      assert.equal(
        await label('allow:svc:bookbuyer/bookbuyer->svc:bookstore/bookstore-v2'),
        'bookbuyer-access-bookstore',
      );
      await mkdir(path.join(repoRoot, 'test-results'), { recursive: true });
      await page.screenshot({ path: path.join(repoRoot, 'test-results', 'ui-traffic.png') });
      assert.deepEqual(pageErrors, []);
    } finally {
      metrics.close();
    }
  });
});
