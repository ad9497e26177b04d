import type { ProtoObject } from '../../../pkg/envoy/types.js';
import { decodeMessage } from '../../../pkg/xds/proto/codec.js';
import {
  ADS_SOTW_PATH,
  type DecodedDiscoveryResponse,
  decodeDiscoveryResponse,
  encodeDiscoveryRequest,
} from '../../../pkg/xds/server/service.js';
import type { DiscoveryRequest } from '../../../pkg/xds/server/types.js';
import { type RawAdsClientOptions, RawClientCall } from './raw-client.js';

export type { RawAdsClientOptions } from './raw-client.js';

/** A response with its resources decoded to plain objects. */
export interface ReceivedResponse extends DecodedDiscoveryResponse {
  messages: ProtoObject[];
  names: string[];
}

function receive(bytes: Buffer): ReceivedResponse {
  const res = decodeDiscoveryResponse(bytes);
  const messages = res.resources.map((r) => decodeMessage(r.typeUrl, r.value));
  // ClusterLoadAssignment names itself by cluster_name; every other type by name.
  const names = messages.map((m) => {
    const n = m['name'] ?? m['cluster_name'];
    return typeof n === 'string' ? n : '';
  });
  return { ...res, messages, names };
}

/**
 * A bare SotW ADS client for tests and tools: sends the requests it is told
 * to and queues every response, with no xDS logic of its own.
 */
export class RawAdsClient extends RawClientCall<DiscoveryRequest, ReceivedResponse> {
  constructor(opts: RawAdsClientOptions) {
    super(opts, ADS_SOTW_PATH, encodeDiscoveryRequest, receive);
  }

  send(req: Partial<DiscoveryRequest> & { typeUrl: string }): void {
    this.write({
      versionInfo: req.versionInfo ?? '',
      resourceNames: req.resourceNames ?? [],
      typeUrl: req.typeUrl,
      responseNonce: req.responseNonce ?? '',
      ...(req.node ? { node: req.node } : {}),
      ...(req.errorDetail ? { errorDetail: req.errorDetail } : {}),
    });
  }

  /** ACKs a response with the given subscription. */
  ack(res: DecodedDiscoveryResponse, resourceNames: string[] = []): void {
    this.send({
      typeUrl: res.typeUrl,
      versionInfo: res.versionInfo,
      responseNonce: res.nonce,
      resourceNames,
    });
  }
}
