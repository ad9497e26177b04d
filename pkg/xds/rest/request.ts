import { TypeUrl } from '../../envoy/types.js';

/**
 * The REST-JSON endpoints of the v3 discovery services (the `google.api.http`
 * options of `Fetch*` in lds/rds/cds/eds/sds.proto), by path.
 */
export const REST_XDS_PATHS: ReadonlyMap<string, TypeUrl> = new Map([
  ['/v3/discovery:listeners', TypeUrl.Listener],
  ['/v3/discovery:routes', TypeUrl.RouteConfiguration],
  ['/v3/discovery:clusters', TypeUrl.Cluster],
  ['/v3/discovery:endpoints', TypeUrl.ClusterLoadAssignment],
  ['/v3/discovery:secrets', TypeUrl.Secret],
]);

/** A REST DiscoveryRequest, reduced to what skein reads. */
export interface RestDiscoveryRequest {
  typeUrl: TypeUrl;
  /** node.id; required (it names the proxy the caller asks for). */
  nodeId: string;
  /** Empty = everything this proxy would be sent of the type. */
  resourceNames: string[];
  /** The version the caller holds; equal to the current one → 304. */
  versionInfo: string;
}

/** The request is malformed: answered 400 with this message. */
export class RestRequestError extends Error {
  override name = 'RestRequestError';
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Proto3 JSON accepts the proto field name and its lowerCamelCase JSON name. */
function field(obj: Record<string, unknown>, protoName: string): unknown {
  if (Object.hasOwn(obj, protoName)) return obj[protoName];
  const jsonName = protoName.replace(/_([a-z])/g, (_s, c: string) => c.toUpperCase());
  return Object.hasOwn(obj, jsonName) ? obj[jsonName] : undefined;
}

function optionalString(obj: Record<string, unknown>, protoName: string, where = ''): string {
  const v = field(obj, protoName);
  if (v === undefined || v === null) return '';
  if (typeof v !== 'string') throw new RestRequestError(`${where}${protoName} must be a string`);
  return v;
}

/**
 * Parses a JSON DiscoveryRequest posted to the endpoint of `pathType`.
 * `type_url`, when given, must agree with the path.
 */
export function parseRestDiscoveryRequest(body: string, pathType: TypeUrl): RestDiscoveryRequest {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch (e) {
    throw new RestRequestError(
      `body is not JSON: ${e instanceof Error ? e.message : String(e)} (expected a DiscoveryRequest such as {"node":{"id":"<proxy CN>"}})`,
    );
  }
  if (!isRecord(parsed)) throw new RestRequestError('body must be a JSON object (a DiscoveryRequest)');
  const node = field(parsed, 'node');
  if (node !== undefined && node !== null && !isRecord(node))
    throw new RestRequestError('node must be an object');
  const nodeId = node ? optionalString(node, 'id', 'node.') : '';
  if (nodeId === '') throw new RestRequestError('node.id is required: the proxy certificate CN');
  const names = field(parsed, 'resource_names');
  let resourceNames: string[] = [];
  if (names !== undefined && names !== null) {
    if (!Array.isArray(names) || !names.every((n): n is string => typeof n === 'string'))
      throw new RestRequestError('resource_names must be an array of strings');
    // '*' asks for everything, as an empty list does.
    resourceNames = names.includes('*') ? [] : names;
  }
  const typeUrl = optionalString(parsed, 'type_url');
  if (typeUrl !== '' && typeUrl !== pathType)
    throw new RestRequestError(
      `type_url ${JSON.stringify(typeUrl)} does not match this endpoint (${pathType})`,
    );
  return { typeUrl: pathType, nodeId, resourceNames, versionInfo: optionalString(parsed, 'version_info') };
}
