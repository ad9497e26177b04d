// The configuration changes the benchmark times: each is one manifest write
// (or removal) in the watched directory, the way an operator would apply it, or
// (Kubernetes mode, kube-topology.ts) one write to the API server.
import { randomBytes } from 'node:crypto';
import { rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import {
  type BenchService,
  benchIp,
  benchUuid,
  podDoc,
  type Topology,
  trafficSplitDoc,
  trafficTargetDoc,
} from './topology.js';

export const CHANGE_KINDS = [
  'endpoint-add',
  'endpoint-remove',
  'traffictarget-add',
  'traffictarget-remove',
  'split-weight',
] as const;
export type ChangeKind = (typeof CHANGE_KINDS)[number];

export interface AppliedChange {
  kind: ChangeKind;
  /** What changed, for the report. */
  subject: string;
  /**
   * Bytes whose presence (or, for removals, absence) in an EDS response shows
   * the change reached a proxy: the length-prefixed address string of the pod IP.
   */
  marker?: { text: string; present: boolean };
}

// First pod number of the pods the changes add (far from the initial ones).
export const EXTRA_POD_BASE = 1_000_000;

/** The IP of the pod the k-th endpoint change adds and removes (a block the topology never uses). */
export function endpointChangeIp(k: number): string {
  return benchIp(k, 1);
}

function yaml(doc: Record<string, unknown>): string {
  return JSON.stringify(doc) + '\n';
}

/** Write-then-rename: the registry never reads half a file (hidden temp names are skipped). */
async function writeAtomic(file: string, text: string): Promise<void> {
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${randomBytes(4).toString('hex')}`);
  await writeFile(tmp, text);
  await rename(tmp, file);
}

/** The k-th split weight for v1 (10–90%), never `previous` (a write that changes nothing pushes nothing). */
export function nextSplitWeight(previous: number, k: number): number {
  const weight = 10 + ((k * 17) % 81);
  if (weight !== previous) return weight;
  return previous === 90 ? 80 : previous + 10;
}

/** Where the driver's writes go: manifest files (local mode) or the API server. */
export interface ChangeSink {
  /** Creates or replaces `doc`; `file` is its manifest in the watched directory. */
  put(file: string, doc: Record<string, unknown>): Promise<void>;
  /** Deletes what `put` created (idempotent). */
  remove(file: string, doc: Record<string, unknown>): Promise<void>;
}

/** Manifest files in the controller's watched directory. */
export const manifestSink: ChangeSink = {
  put: (file, doc) => writeAtomic(file, yaml(doc)),
  remove: (file) => rm(file, { force: true }),
};

/** Applies the k-th repetition of each change kind, cycling over services so changes do not pile up. */
export class ChangeDriver {
  private readonly apexes: BenchService[];
  private readonly weights = new Map<string, number>();

  constructor(
    private readonly topo: Topology,
    private readonly sink: ChangeSink = manifestSink,
  ) {
    this.apexes = topo.services.filter((s) => s.split);
  }

  private service(i: number): BenchService {
    const s =
      this.topo.services[
        ((i % this.topo.services.length) + this.topo.services.length) % this.topo.services.length
      ];
    if (!s) throw new Error('no services');
    return s;
  }

  private podFile(k: number): string {
    return path.join(this.topo.dir, `change-pod-${k}.yaml`);
  }

  private targetFile(k: number): string {
    return path.join(this.topo.dir, `change-tt-${k}.yaml`);
  }

  async apply(kind: ChangeKind, k: number): Promise<AppliedChange> {
    switch (kind) {
      case 'endpoint-add':
      case 'endpoint-remove': {
        const svc = this.service(k * 7 + 1);
        const ip = endpointChangeIp(k);
        const pod = podDoc(svc, `${svc.name}-extra-${k}`, benchUuid(EXTRA_POD_BASE + k), ip, 'v1');
        if (kind === 'endpoint-add') await this.sink.put(this.podFile(k), pod);
        else await this.sink.remove(this.podFile(k), pod);
        return {
          kind,
          subject: `pod ${ip} of ${svc.namespace}/${svc.name}`,
          marker: { text: ip, present: kind === 'endpoint-add' },
        };
      }
      case 'traffictarget-add':
      case 'traffictarget-remove': {
        const dest = this.service(k * 11 + 2);
        // Half-way round the ring: never one of the sources the topology already admits.
        const source = this.service(dest.index + Math.floor(this.topo.services.length / 2));
        const doc = trafficTargetDoc(`bench-extra-${k}`, dest, [source]);
        if (kind === 'traffictarget-add') await this.sink.put(this.targetFile(k), doc);
        else await this.sink.remove(this.targetFile(k), doc);
        return { kind, subject: `${source.name} -> ${dest.name}` };
      }
      case 'split-weight': {
        const apex = this.apexes[k % Math.max(1, this.apexes.length)];
        if (!apex) throw new Error('the topology has no TrafficSplit');
        const previous = this.weights.get(apex.name) ?? 50;
        const weight = nextSplitWeight(previous, k);
        this.weights.set(apex.name, weight);
        await this.sink.put(this.topo.files.split(apex), trafficSplitDoc(apex, weight));
        return { kind, subject: `${apex.name} v1 ${previous}% -> ${weight}%` };
      }
    }
  }
}
