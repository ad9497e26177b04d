// The demo's private copy of an example mesh: copied, optionally with every
// workload port shifted, and read back for the pods the demo runs.
import { cp, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { type Document, isMap, isSeq, parseAllDocuments } from 'yaml';

export interface DemoPod {
  namespace: string;
  name: string;
  ip: string;
  /** The first containerPort of the first container (after any offset). */
  port: number;
}

/**
 * Copies `from` into `to` and shifts every Pod containerPort by `offset`, and
 * every IngressBackend backend port with them (it names the pod's port).
 */
export async function copyManifests(from: string, to: string, offset: number): Promise<void> {
  await cp(from, to, { recursive: true });
  if (offset === 0) return;
  for (const file of await yamlFiles(to)) {
    const text = await readFile(file, 'utf8');
    const docs = parseAllDocuments(text);
    let changed = false;
    for (const doc of docs)
      changed = shiftContainerPorts(doc, offset) || shiftIngressBackendPorts(doc, offset) || changed;
    // Document.toString keeps comments, so the copy still reads like the example.
    if (changed) await writeFile(file, docs.map((d) => d.toString()).join(''));
  }
}

/** Pods (with an IP and a container port) found in the manifests of `dir`. */
export async function readPods(dir: string): Promise<DemoPod[]> {
  const pods: DemoPod[] = [];
  for (const file of await yamlFiles(dir)) {
    for (const doc of parseAllDocuments(await readFile(file, 'utf8'))) {
      if (doc.get('kind') !== 'Pod') continue;
      const name = doc.getIn(['metadata', 'name']);
      const namespace = doc.getIn(['metadata', 'namespace']) ?? 'default';
      const ip = doc.getIn(['status', 'podIP']);
      const port = doc.getIn(['spec', 'containers', 0, 'ports', 0, 'containerPort']);
      if (typeof name === 'string' && typeof namespace === 'string' && typeof ip === 'string') {
        if (typeof port === 'number') pods.push({ namespace, name, ip, port });
      }
    }
  }
  return pods;
}

function shifted(value: number, offset: number): number {
  const port = value + offset;
  if (port < 1 || port > 65535) throw new RangeError(`port ${value} + ${offset} is not a port`);
  return port;
}

function shiftIngressBackendPorts(doc: Document, offset: number): boolean {
  if (doc.get('kind') !== 'IngressBackend') return false;
  const backends = doc.getIn(['spec', 'backends']);
  if (!isSeq(backends)) return false;
  let changed = false;
  for (const b of backends.items) {
    if (!isMap(b)) continue;
    const port = b.get('port');
    if (!isMap(port)) continue;
    const value = port.get('number');
    if (typeof value !== 'number') continue;
    port.set('number', shifted(value, offset));
    changed = true;
  }
  return changed;
}

function shiftContainerPorts(doc: Document, offset: number): boolean {
  if (doc.get('kind') !== 'Pod') return false;
  const containers = doc.getIn(['spec', 'containers']);
  if (!isSeq(containers)) return false;
  let changed = false;
  for (const container of containers.items) {
    if (!isMap(container)) continue;
    const ports = container.get('ports');
    if (!isSeq(ports)) continue;
    for (const p of ports.items) {
      if (!isMap(p)) continue;
      const value = p.get('containerPort');
      if (typeof value !== 'number') continue;
      p.set('containerPort', shifted(value, offset));
      changed = true;
    }
  }
  return changed;
}

async function yamlFiles(dir: string): Promise<string[]> {
  const names = await readdir(dir);
  return names
    .filter((n) => n.endsWith('.yaml') || n.endsWith('.yml'))
    .sort()
    .map((n) => path.join(dir, n));
}
