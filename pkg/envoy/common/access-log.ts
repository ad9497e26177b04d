// Access logs (MeshConfig spec.observability.accessLog): every HTTP connection
// manager and tcp_proxy of a sidecar's or the ingress gateway's listeners
// logs to the proxy's stdout, one JSON object per request (or connection)
// by default. Applied to finished listener messages, so the builders stay as
// they are, and memoised on (listener, setting): an unchanged listener is the
// same object under an unchanged setting.
import { derive } from '../../catalog/derive.js';
import type { MeshView } from '../../catalog/types.js';
import { meshConfigOf } from '../../catalog/view.js';
import type { AccessLog, Listener, Listener$Filter, Struct } from '../api/envoy.js';
import { deepFreeze } from './freeze.js';
import { IdentityMemo } from './memo.js';
import { AnyType, ExtName, typed } from './xds.js';

export type AccessLogSetting = 'json' | 'text' | 'off';

/** The mesh's setting: on (JSON) unless the MeshConfig turns it off or asks for text. */
export function accessLogSetting(view: MeshView): AccessLogSetting {
  return derive(view, 'accessLog', (v) => {
    const a = meshConfigOf(v)?.spec.observability?.accessLog;
    if (a?.enabled === false) return 'off';
    return a?.format === 'text' ? 'text' : 'json';
  });
}

// Envoy command operators (access log "Command operators" docs): a value made
// of one operator keeps its type in JSON (numbers stay numbers).
export const HTTP_LOG_FIELDS: Readonly<Record<string, string>> = {
  start_time: '%START_TIME%',
  method: '%REQ(:METHOD)%',
  path: '%REQ(X-ENVOY-ORIGINAL-PATH?:PATH)%',
  authority: '%REQ(:AUTHORITY)%',
  protocol: '%PROTOCOL%',
  response_code: '%RESPONSE_CODE%',
  response_code_details: '%RESPONSE_CODE_DETAILS%',
  response_flags: '%RESPONSE_FLAGS%',
  duration: '%DURATION%',
  upstream_cluster: '%UPSTREAM_CLUSTER%',
  upstream_host: '%UPSTREAM_HOST%',
  upstream_request_attempt_count: '%UPSTREAM_REQUEST_ATTEMPT_COUNT%',
  bytes_received: '%BYTES_RECEIVED%',
  bytes_sent: '%BYTES_SENT%',
  request_id: '%REQ(X-REQUEST-ID)%',
  downstream_peer_uri_san: '%DOWNSTREAM_PEER_URI_SAN%',
  downstream_remote_address: '%DOWNSTREAM_REMOTE_ADDRESS%',
  user_agent: '%REQ(USER-AGENT)%',
};

/** A TCP connection has no request: the connection-level subset. */
export const TCP_LOG_FIELDS: Readonly<Record<string, string>> = {
  start_time: '%START_TIME%',
  response_flags: '%RESPONSE_FLAGS%',
  duration: '%DURATION%',
  upstream_cluster: '%UPSTREAM_CLUSTER%',
  upstream_host: '%UPSTREAM_HOST%',
  bytes_received: '%BYTES_RECEIVED%',
  bytes_sent: '%BYTES_SENT%',
  downstream_peer_uri_san: '%DOWNSTREAM_PEER_URI_SAN%',
  downstream_remote_address: '%DOWNSTREAM_REMOTE_ADDRESS%',
};

function struct(fields: Readonly<Record<string, string>>): Struct {
  const out: Struct = { fields: {} };
  for (const [k, v] of Object.entries(fields)) if (out.fields) out.fields[k] = { stringValue: v };
  return out;
}

const sharedLogs = new Map<string, WeakMap<Readonly<Record<string, string>>, AccessLog>>();

/**
 * The stdout access log of a setting and field set: one deep-frozen object for
 * every HCM and tcp_proxy that carries it, so the encoder packs its Any once
 * (proto/direct-encode.ts keeps a frozen Any's payload).
 */
export function stdoutAccessLog(
  setting: 'json' | 'text',
  fields: Readonly<Record<string, string>>,
): AccessLog {
  let byFields = sharedLogs.get(setting);
  if (!byFields) {
    byFields = new WeakMap();
    sharedLogs.set(setting, byFields);
  }
  let log = byFields.get(fields);
  if (!log) {
    log = deepFreeze({
      name: ExtName.StdoutAccessLog,
      // text: Envoy's default format line.
      typed_config: typed(
        AnyType.StdoutAccessLog,
        setting === 'json' ? { log_format: { json_format: struct(fields) } } : {},
      ),
    });
    byFields.set(fields, log);
  }
  return log;
}

function logged(filter: Listener$Filter, setting: 'json' | 'text'): Listener$Filter {
  const cfg = filter.typed_config;
  if (cfg?.['@type'] === AnyType.HttpConnectionManager)
    return { ...filter, typed_config: { ...cfg, access_log: [stdoutAccessLog(setting, HTTP_LOG_FIELDS)] } };
  if (cfg?.['@type'] === AnyType.TcpProxy)
    return { ...filter, typed_config: { ...cfg, access_log: [stdoutAccessLog(setting, TCP_LOG_FIELDS)] } };
  return filter;
}

// A filter shared by several listeners (a deep-frozen outbound HCM, lds/sidecar.ts)
// gets one logged copy, frozen in turn, so its Any is still packed once.
const loggedFilters = new IdentityMemo<Listener$Filter>();

function withLog(filter: Listener$Filter, setting: 'json' | 'text'): Listener$Filter {
  if (!Object.isFrozen(filter)) return logged(filter, setting);
  return loggedFilters.get([filter], setting, () => deepFreeze(logged(filter, setting)));
}

const memo = new WeakMap<Listener, Map<AccessLogSetting, Listener>>();

/** The listener with access logs on its HCMs and tcp_proxies (the same object for the same inputs). */
export function withAccessLogs(listener: Listener, setting: AccessLogSetting): Listener {
  if (setting === 'off') return listener;
  let bySetting = memo.get(listener);
  if (!bySetting) {
    bySetting = new Map();
    memo.set(listener, bySetting);
  }
  const known = bySetting.get(setting);
  if (known) return known;
  const chain = <C extends { filters?: Listener$Filter[] }>(c: C): C =>
    c.filters ? { ...c, filters: c.filters.map((f) => withLog(f, setting)) } : c;
  const out: Listener = { ...listener };
  if (listener.filter_chains) out.filter_chains = listener.filter_chains.map(chain);
  if (listener.default_filter_chain) out.default_filter_chain = chain(listener.default_filter_chain);
  bySetting.set(setting, out);
  return out;
}
