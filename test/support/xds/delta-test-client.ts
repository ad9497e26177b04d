import type { ProtoObject } from '../../../pkg/envoy/types.js';
import { decodeMessage } from '../../../pkg/xds/proto/codec.js';
import {
  type DecodedDeltaDiscoveryResponse,
  decodeDeltaDiscoveryResponse,
  encodeDeltaDiscoveryRequest,
} from '../../../pkg/xds/server/delta-codec.js';
import { ADS_DELTA_PATH } from '../../../pkg/xds/server/service.js';
import type { DeltaDiscoveryRequest } from '../../../pkg/xds/server/types.js';
import { type RawAdsClientOptions, RawClientCall } from './raw-client.js';

/** A delta response with its resources decoded to plain objects. */
export interface ReceivedDeltaResponse extends DecodedDeltaDiscoveryResponse {
  messages: ProtoObject[];
  /** Resource names, in response order. */
  names: string[];
  /** name → per-resource version. */
  versions: Map<string, string>;
}

function receive(bytes: Buffer): ReceivedDeltaResponse {
  const res = decodeDeltaDiscoveryResponse(bytes);
  return {
    ...res,
    messages: res.resources.map((r) => decodeMessage(r.typeUrl, r.value)),
    names: res.resources.map((r) => r.name),
    versions: new Map(res.resources.map((r) => [r.name, r.version])),
  };
}

/**
 * A bare Delta ADS client for tests and tools: sends the requests it is told
 * to and queues every response, with no xDS logic of its own.
 */
export class RawDeltaClient extends RawClientCall<DeltaDiscoveryRequest, ReceivedDeltaResponse> {
  constructor(opts: RawAdsClientOptions) {
    super(opts, ADS_DELTA_PATH, encodeDeltaDiscoveryRequest, receive);
  }

  send(req: Partial<DeltaDiscoveryRequest> & { typeUrl: string }): void {
    this.write({
      typeUrl: req.typeUrl,
      resourceNamesSubscribe: req.resourceNamesSubscribe ?? [],
      resourceNamesUnsubscribe: req.resourceNamesUnsubscribe ?? [],
      initialResourceVersions: req.initialResourceVersions ?? new Map(),
      responseNonce: req.responseNonce ?? '',
      ...(req.node ? { node: req.node } : {}),
      ...(req.errorDetail ? { errorDetail: req.errorDetail } : {}),
    });
  }

  /** ACKs a response. */
  ack(res: DecodedDeltaDiscoveryResponse): void {
    this.send({ typeUrl: res.typeUrl, responseNonce: res.nonce });
  }

  /** NACKs a response with this reason. */
  nack(res: DecodedDeltaDiscoveryResponse, message: string): void {
    this.send({ typeUrl: res.typeUrl, responseNonce: res.nonce, errorDetail: { code: 3, message } });
  }
}
