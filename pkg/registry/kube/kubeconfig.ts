import { readFileSync } from 'node:fs';
import type https from 'node:https';
import { isIPv6 } from 'node:net';
import path from 'node:path';
import { parse } from 'yaml';

/**
 * What the Kubernetes clients need of an API connection: the server, and the TLS
 * options and credentials of each request. @kubernetes/client-node's KubeConfig
 * has this shape (the CLI and tests pass one); the controller loads its own
 * (loadKubeConfig), because importing client-node costs ~64 MB of RSS (its
 * generated API models and undici) for what is a few fields of a kubeconfig.
 */
export interface KubeConfig {
  getCurrentCluster(): { server: string } | null;
  /** Sets the CA, client certificate and key, server name and Authorization header. */
  applyToHTTPSOptions(opts: https.RequestOptions): Promise<void>;
}

export interface KubeConfigSource {
  /** A kubeconfig file; its current context is used. */
  kubeconfig?: string;
  /** The pod's service account (token, CA and KUBERNETES_SERVICE_HOST/PORT). */
  inCluster?: boolean;
  /** Where the service account's files are mounted (tests; default the kubelet's path). */
  serviceAccountDir?: string;
}

// https://kubernetes.io/docs/tasks/run-application/access-api-from-pod/#directly-accessing-the-rest-api
const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
// client-go re-reads a token file at most once a minute (transport's cachingTokenSource):
// projected service account tokens are rotated on disk by the kubelet.
const TOKEN_FILE_TTL_MS = 60_000;

/** A kubeconfig's current context, reduced to what a request needs. */
interface Connection {
  server: string;
  ca?: Buffer;
  insecure: boolean;
  serverName?: string;
  cert?: Buffer;
  key?: Buffer;
  token?: string;
  tokenFile?: string;
  basicAuth?: string;
}

class StaticKubeConfig implements KubeConfig {
  private token: { value: string; readAt: number } | undefined;

  constructor(private readonly c: Connection) {}

  getCurrentCluster(): { server: string } {
    return { server: this.c.server };
  }

  async applyToHTTPSOptions(opts: https.RequestOptions): Promise<void> {
    const { c } = this;
    if (c.ca) opts.ca = c.ca;
    if (c.insecure) opts.rejectUnauthorized = false;
    if (c.serverName) opts.servername = c.serverName;
    if (c.cert) opts.cert = c.cert;
    if (c.key) opts.key = c.key;
    if (c.basicAuth) opts.auth = c.basicAuth;
    const token = this.bearer();
    if (token) opts.headers = { ...(opts.headers as object), authorization: `Bearer ${token}` };
  }

  private bearer(): string | undefined {
    const { tokenFile } = this.c;
    if (tokenFile === undefined) return this.c.token;
    const now = Date.now();
    if (!this.token || now - this.token.readAt > TOKEN_FILE_TTL_MS)
      this.token = { value: readFileSync(tokenFile, 'utf8').trim(), readAt: now };
    return this.token.value;
  }
}

type Doc = Record<string, unknown>;

function isDoc(v: unknown): v is Doc {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The `cluster`/`user`/`context` body of the named entry of a kubeconfig list. */
function entry(doc: Doc, list: string, field: string, name: unknown, file: string): Doc {
  const items = Array.isArray(doc[list]) ? (doc[list] as unknown[]) : [];
  const found = items.find((i) => isDoc(i) && i['name'] === name);
  const body = isDoc(found) ? found[field] : undefined;
  if (!isDoc(body)) throw new Error(`${file}: no ${field} named ${JSON.stringify(name)} in ${list}`);
  return body;
}

function str(d: Doc, key: string): string | undefined {
  const v = d[key];
  return typeof v === 'string' && v !== '' ? v : undefined;
}

// User and cluster fields that need more than TLS options and a header: exec
// credential plugins, auth providers (OIDC, cloud), impersonation, proxies.
const DELEGATED_USER_FIELDS = ['exec', 'auth-provider', 'as', 'as-groups', 'as-uid', 'as-user-extra'];
const DELEGATED_CLUSTER_FIELDS = ['proxy-url'];

/**
 * Reads the API connection of a kubeconfig file's current context. Relative file
 * paths are relative to the kubeconfig, as kubectl reads them
 * (https://kubernetes.io/docs/concepts/configuration/organize-cluster-access-kubeconfig/#file-references).
 * A context using an exec plugin, an auth provider, impersonation or a proxy is
 * read by client-node instead, imported only then.
 */
function fromFile(file: string): KubeConfig {
  const doc: unknown = parse(readFileSync(file, 'utf8'));
  if (!isDoc(doc)) throw new Error(`${file}: not a kubeconfig`);
  const contextName = doc['current-context'];
  if (typeof contextName !== 'string' || contextName === '') throw new Error(`${file}: no current cluster`);
  const context = entry(doc, 'contexts', 'context', contextName, file);
  const cluster = entry(doc, 'clusters', 'cluster', context['cluster'], file);
  const user = context['user'] === undefined ? {} : entry(doc, 'users', 'user', context['user'], file);
  if (
    DELEGATED_USER_FIELDS.some((f) => user[f] !== undefined) ||
    DELEGATED_CLUSTER_FIELDS.some((f) => cluster[f] !== undefined)
  )
    return delegated(file, str(cluster, 'server'));
  const server = str(cluster, 'server');
  if (!server) throw new Error(`${file}: no current cluster`);
  const dir = path.dirname(file);
  const bytes = (fileKey: string, dataKey: string, from: Doc): Buffer | undefined => {
    const data = str(from, dataKey);
    if (data) return Buffer.from(data, 'base64');
    const ref = str(from, fileKey);
    return ref ? readFileSync(path.resolve(dir, ref)) : undefined;
  };
  const c: Connection = { server, insecure: cluster['insecure-skip-tls-verify'] === true };
  const ca = bytes('certificate-authority', 'certificate-authority-data', cluster);
  const cert = bytes('client-certificate', 'client-certificate-data', user);
  const key = bytes('client-key', 'client-key-data', user);
  const serverName = str(cluster, 'tls-server-name');
  const token = str(user, 'token');
  const tokenFile = str(user, 'tokenFile');
  const username = str(user, 'username');
  if (ca) c.ca = ca;
  if (cert) c.cert = cert;
  if (key) c.key = key;
  if (serverName) c.serverName = serverName;
  // kubectl prefers the token to the token file when both are set.
  if (token) c.token = token;
  else if (tokenFile) c.tokenFile = path.resolve(dir, tokenFile);
  if (username) c.basicAuth = `${username}:${str(user, 'password') ?? ''}`;
  return new StaticKubeConfig(c);
}

/** client-node's KubeConfig for what fromFile does not read itself, imported on first use. */
function delegated(file: string, server: string | undefined): KubeConfig {
  if (!server) throw new Error(`${file}: no current cluster`);
  let loaded: Promise<KubeConfig> | undefined;
  return {
    getCurrentCluster: () => ({ server }),
    async applyToHTTPSOptions(opts) {
      loaded ??= import('@kubernetes/client-node').then(({ KubeConfig: ClientNodeKubeConfig }) => {
        const kc = new ClientNodeKubeConfig();
        kc.loadFromFile(file);
        return kc;
      });
      await (await loaded).applyToHTTPSOptions(opts);
    },
  };
}

/** The pod's service account, as client-go's rest.InClusterConfig reads it. */
function inCluster(dir: string): KubeConfig {
  const host = process.env['KUBERNETES_SERVICE_HOST'];
  const port = process.env['KUBERNETES_SERVICE_PORT'];
  if (!host || !port)
    throw new Error('in-cluster config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set');
  return new StaticKubeConfig({
    server: `https://${isIPv6(host) ? `[${host}]` : host}:${port}`,
    ca: readFileSync(path.join(dir, 'ca.crt')),
    insecure: false,
    tokenFile: path.join(dir, 'token'),
  });
}

/** Loads the API server connection: a kubeconfig file, or in-cluster config. */
export function loadKubeConfig(source: KubeConfigSource): KubeConfig {
  if (source.kubeconfig) return fromFile(source.kubeconfig);
  if (source.inCluster) return inCluster(source.serviceAccountDir ?? SERVICE_ACCOUNT_DIR);
  throw new Error('no Kubernetes configuration: pass --kubeconfig or run in a pod');
}
