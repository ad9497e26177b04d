import type { StreamStatus, TypeStatus } from '../xds/server/types.js';

/**
 * Per-type sync state, as Istio's syncz reports it: SYNCED when the proxy ACKed
 * what we last sent, NACKED when it rejected that, STALE when it has not answered
 * yet, NOT_SENT before the first response of the type.
 */
export type SyncState = 'SYNCED' | 'STALE' | 'NACKED' | 'NOT_SENT';

export function syncState(t: TypeStatus): SyncState {
  if (t.sentVersion === undefined) return 'NOT_SENT';
  // A NACK keeps the rejected version recorded as sent (xDS rule 3), so
  // nacked == sent means the last response was the one rejected.
  if (t.nackedVersion === t.sentVersion) return 'NACKED';
  if (t.ackedVersion === t.sentVersion) return 'SYNCED';
  return 'STALE';
}

export interface PodRef {
  namespace: string;
  name: string;
}

export interface DebugProxy extends Omit<StreamStatus, 'types'> {
  /** The pod labelled with the proxy's UUID, when the catalog knows it. */
  pod?: PodRef;
  types: { [typeUrl: string]: TypeStatus & { syncState: SyncState } };
}

/** `/debug/proxies`: every authenticated stream with its pod and per-type sync state. */
export function buildProxies(
  streams: readonly StreamStatus[],
  podOf: (s: StreamStatus) => PodRef | undefined,
): DebugProxy[] {
  return streams
    .map((s) => {
      const types: DebugProxy['types'] = {};
      for (const [typeUrl, t] of Object.entries(s.types)) types[typeUrl] = { ...t, syncState: syncState(t) };
      const out: DebugProxy = { ...s, types };
      const pod = podOf(s);
      if (pod !== undefined) out.pod = pod;
      return out;
    })
    .sort((a, b) => a.connectedAt.localeCompare(b.connectedAt) || a.streamId.localeCompare(b.streamId));
}

/** The stream a `?proxy=` parameter names: a stream id, or a proxy UUID (its newest stream). */
export function findStream(streams: readonly StreamStatus[], id: string): StreamStatus | undefined {
  const byStream = streams.find((s) => s.streamId === id);
  if (byStream !== undefined) return byStream;
  let newest: StreamStatus | undefined;
  for (const s of streams)
    if (s.identity.uuid === id && (newest === undefined || s.connectedAt >= newest.connectedAt)) newest = s;
  return newest;
}
