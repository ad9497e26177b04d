// The oracle's two registries: manifest files in a directory (local mode) and
// objects in a real API server (Kubernetes mode). Both run the real
// skein-controller as a child process; the live one on fixed ports, so the
// connected clients find it again after a restart, as proxies would.
import { cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import type { ObjectKind } from '../../pkg/model/objects.js';
import { KubeApiError, KubeClient } from '../../pkg/registry/kube/client.js';
import { watchedTypes } from '../../pkg/registry/kube/types.js';
import { createNamespace, TEST_NODE } from '../support/kube.js';
import { prepareMeshCluster } from '../support/kube-registry-fixture.js';
import { freePorts, spawnNode } from '../support/processes.js';
import type { Backend, Endpoint } from './oracle.js';
import type { KubeObj, Universe } from './world.js';

const controllerScript = fileURLToPath(new URL('../../cmd/skein-controller/main.js', import.meta.url));

/** Starts skein-controller with `args` plus the ports and state dir; resolves once it is ready. */
async function startController(
  args: string[],
  stateDir: string,
  ports: { ads: number; insecure: number; http: number },
): Promise<Endpoint> {
  const p = spawnNode(
    'skein-controller',
    controllerScript,
    [
      ...args,
      ...['--state-dir', stateDir, '--host', '127.0.0.1'],
      ...['--ads-port', String(ports.ads), '--insecure-ads-port', String(ports.insecure)],
      ...['--http-port', String(ports.http), '--min-push-interval', '50ms'],
    ],
    // info: the ready line that names the ports is an info line.
    { SKEIN_LOG_LEVEL: 'info' },
  );
  try {
    const ready = await p.waitFor((l) => l['msg'] === 'skein controller ready', 30_000);
    return {
      adsPort: Number(ready['ads']),
      insecurePort: Number(ready['insecureAds']),
      stateDir,
      process: p,
    };
  } catch (err) {
    await p.stop();
    throw err;
  }
}

/** The fresh controller's own state dir with a copy of the live one's CA (the same root, new leaves). */
async function freshStateDir(root: string, liveState: string): Promise<string> {
  const dir = path.join(root, 'fresh-state');
  await mkdir(dir, { recursive: true });
  await cp(path.join(liveState, 'ca'), path.join(dir, 'ca'), { recursive: true });
  return dir;
}

function fileOf(o: KubeObj): string {
  return `${o.kind.toLowerCase()}.${o.metadata.namespace ?? '-'}.${o.metadata.name}.yaml`;
}

export class LocalBackend implements Backend {
  readonly universe: Universe = {
    meshName: 'skein',
    namespaces: ['shop', 'pay', 'ops'],
    controlPlane: 'skein-system',
    local: true,
  };
  private root = '';
  private dir = '';
  private stateDir = '';
  private ports = { ads: 0, insecure: 0, http: 0 };
  private live: Endpoint | undefined;
  private fresh: Endpoint | undefined;

  /**
   * `alterFresh` changes a copy of the final manifests for the fresh controller
   * only: a negative control, a change the live controller never saw.
   */
  constructor(private readonly opts: { alterFresh?: (dir: string) => Promise<void> } = {}) {}

  private args(dir = this.dir): string[] {
    return ['--local', dir];
  }

  async setup(initial: readonly KubeObj[]): Promise<Endpoint> {
    this.root = await mkdtemp(path.join(tmpdir(), 'skein-oracle-'));
    this.dir = path.join(this.root, 'manifests');
    this.stateDir = path.join(this.root, 'state');
    await mkdir(this.dir);
    for (const o of initial) await this.apply(o);
    const [ads = 0, insecure = 0, http = 0] = await freePorts(3);
    this.ports = { ads, insecure, http };
    this.live = await startController(this.args(), this.stateDir, this.ports);
    return this.live;
  }

  async apply(obj: KubeObj): Promise<'applied'> {
    await writeFile(path.join(this.dir, fileOf(obj)), stringify(obj));
    return 'applied';
  }

  async breakYaml(obj: KubeObj): Promise<void> {
    await writeFile(path.join(this.dir, fileOf(obj)), `${stringify(obj)}\n  broken: [yaml\n`);
  }

  async remove(obj: KubeObj): Promise<void> {
    await rm(path.join(this.dir, fileOf(obj)), { force: true });
  }

  async restart(): Promise<Endpoint> {
    await this.live?.process.stop();
    this.live = await startController(this.args(), this.stateDir, this.ports);
    return this.live;
  }

  async startFresh(): Promise<Endpoint> {
    const state = await freshStateDir(this.root, this.stateDir);
    let dir = this.dir;
    if (this.opts.alterFresh) {
      dir = path.join(this.root, 'fresh-manifests');
      await cp(this.dir, dir, { recursive: true });
      await this.opts.alterFresh(dir);
    }
    this.fresh = await startController(this.args(dir), state, { ads: 0, insecure: 0, http: 0 });
    return this.fresh;
  }

  async stop(): Promise<void> {
    await this.live?.process.stop();
    await this.fresh?.process.stop();
    if (this.root) await rm(this.root, { recursive: true, force: true });
  }
}

/** Group/version path and plural per kind, from the collections the registry watches. */
const COLLECTIONS = new Map(
  watchedTypes('').map((t) => [
    t.kind,
    {
      base: t.apiVersion.includes('/') ? `/apis/${t.apiVersion}` : `/api/${t.apiVersion}`,
      plural: t.path.slice(t.path.lastIndexOf('/') + 1),
    },
  ]),
);

function objectPath(o: KubeObj): string {
  const c = COLLECTIONS.get(o.kind as ObjectKind);
  if (!c) throw new Error(`no collection for kind ${o.kind}`);
  const ns = o.metadata.namespace ? `/namespaces/${o.metadata.namespace}` : '';
  return `${c.base}${ns}/${c.plural}/${o.metadata.name}`;
}

/** 4xx from the API server: it refused the change (validation, admission, a missing ServiceAccount). */
function refusal(err: unknown): boolean {
  if (!(err instanceof KubeApiError)) return false;
  // Server-side apply answers a list with duplicate keys (a port used twice) with a 500.
  if (err.status === 500 && err.message.includes('failed to create typed patch object')) return true;
  return err.status >= 400 && err.status < 500 && err.status !== 409;
}

export class KubeBackend implements Backend {
  readonly universe: Universe;
  private readonly client: KubeClient;
  private root = '';
  private stateDir = '';
  private ports = { ads: 0, insecure: 0, http: 0 };
  private live: Endpoint | undefined;
  private fresh: Endpoint | undefined;
  /** The pod specs on the server, by path: a changed spec (immutable) means delete and create. */
  private readonly podSpecs = new Map<string, string>();

  constructor(
    private readonly kubeConfig: KubeConfig,
    private readonly core: CoreV1Api,
    private readonly kubeconfigPath: string,
    sfx: string,
  ) {
    this.universe = {
      meshName: `skein-oracle-${sfx}`,
      namespaces: ['shop', 'pay', 'ops'].map((n) => `${n}-${sfx}`),
      controlPlane: `skein-oracle-cp-${sfx}`,
      local: false,
    };
    this.client = new KubeClient({ kubeConfig });
  }

  private args(): string[] {
    const u = this.universe;
    return [
      ...['--kubeconfig', this.kubeconfigPath, '--mesh-name', u.meshName, '--namespace', u.controlPlane],
      ...['--rest-xds-port', '0', '--webhook-port', '0', '--workload-files'],
    ];
  }

  async setup(initial: readonly KubeObj[]): Promise<Endpoint> {
    this.root = await mkdtemp(path.join(tmpdir(), 'skein-oracle-kube-'));
    this.stateDir = path.join(this.root, 'state');
    await prepareMeshCluster(this.kubeConfig, this.core, this.universe.controlPlane);
    for (const ns of this.universe.namespaces) await createNamespace(this.core, ns);
    for (const o of initial) {
      if ((await this.apply(o)) !== 'applied') throw new Error(`initial object refused: ${objectPath(o)}`);
    }
    const [ads = 0, insecure = 0, http = 0] = await freePorts(3);
    this.ports = { ads, insecure, http };
    this.live = await startController(this.args(), this.stateDir, this.ports);
    return this.live;
  }

  async apply(obj: KubeObj): Promise<'applied' | 'refused' | 'deleted'> {
    const p = objectPath(obj);
    const { status, ...rest } = obj;
    const body: KubeObj = structuredClone(rest);
    if (obj.kind === 'Pod' && body.spec) body.spec['nodeName'] = TEST_NODE;
    let deleted = false;
    if (obj.kind === 'Pod') {
      const spec = JSON.stringify(body.spec);
      const before = this.podSpecs.get(p);
      if (before !== undefined && before !== spec) {
        await this.remove(obj);
        deleted = true;
      }
    }
    try {
      await this.client.request('PATCH', p, {
        body,
        contentType: 'application/apply-patch+yaml',
        query: { fieldManager: 'skein-oracle', force: true },
      });
      if (obj.kind === 'Pod') {
        this.podSpecs.set(p, JSON.stringify(body.spec));
        await this.client.request('PATCH', `${p}/status`, {
          body: { status: kubeletStatus(status ?? {}) },
          contentType: 'application/merge-patch+json',
        });
      }
      return 'applied';
    } catch (err) {
      if (!refusal(err)) throw err;
      return deleted ? 'deleted' : 'refused';
    }
  }

  async breakYaml(): Promise<void> {
    throw new Error('an API server holds no YAML to break');
  }

  async remove(obj: KubeObj): Promise<void> {
    const p = objectPath(obj);
    try {
      await this.client.request('DELETE', p, obj.kind === 'Pod' ? { query: { gracePeriodSeconds: 0 } } : {});
    } catch (err) {
      if (!(err instanceof KubeApiError && err.status === 404)) throw err;
    }
    this.podSpecs.delete(p);
  }

  async restart(): Promise<Endpoint> {
    await this.live?.process.stop();
    this.live = await startController(this.args(), this.stateDir, this.ports);
    return this.live;
  }

  async startFresh(): Promise<Endpoint> {
    const state = await freshStateDir(this.root, this.stateDir);
    this.fresh = await startController(this.args(), state, { ads: 0, insecure: 0, http: 0 });
    return this.fresh;
  }

  async stop(): Promise<void> {
    await this.live?.process.stop();
    await this.fresh?.process.stop();
    const u = this.universe;
    await Promise.all(
      [...u.namespaces, u.controlPlane].map((name) =>
        this.core.deleteNamespace({ name }).catch(() => undefined),
      ),
    );
    if (this.root) await rm(this.root, { recursive: true, force: true });
  }
}

/** What a kubelet would report for the model's pod status (Running, an IP, Ready or not). */
function kubeletStatus(s: { [k: string]: unknown }): Record<string, unknown> {
  const now = new Date().toISOString();
  const conditions = Array.isArray(s['conditions']) ? s['conditions'] : [];
  const ready = conditions.some(
    (c: unknown) =>
      typeof c === 'object' &&
      c !== null &&
      Reflect.get(c, 'type') === 'Ready' &&
      Reflect.get(c, 'status') === 'True',
  )
    ? 'True'
    : 'False';
  return {
    phase: 'Running',
    podIP: s['podIP'],
    podIPs: s['podIPs'],
    hostIP: '127.0.0.1',
    startTime: now,
    conditions: [
      { type: 'PodScheduled', status: 'True', lastTransitionTime: now },
      { type: 'Initialized', status: 'True', lastTransitionTime: now },
      { type: 'ContainersReady', status: ready, lastTransitionTime: now },
      { type: 'Ready', status: ready, lastTransitionTime: now },
    ],
  };
}
