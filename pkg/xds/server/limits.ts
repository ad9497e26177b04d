// What one ADS stream may cost everyone else: how many resource names it may
// subscribe to per type, how long a name may be, how fast it may send
// requests and names, and how large one message may be. A stream over a limit
// is ended with a status naming the limit; nothing it sent is applied.
import { status as Status } from '@grpc/grpc-js';
import { TokenBucket } from '../../ratelimit/token-bucket.js';

export interface StreamLimits {
  /** Resource names one stream may subscribe to per type (SotW: per request; Delta: accumulated). */
  maxNamesPerType: number;
  /** Characters (UTF-8 bytes on the wire) in one resource name. */
  maxNameLength: number;
  /** Requests per second one stream may send on average; twice as many may come at once. */
  requestsPerSecond: number;
  /** Resource names per second one stream may send on average, summed over its requests. */
  namesPerSecond: number;
  /** Bytes of one request message (gRPC max receive size). */
  maxMessageBytes: number;
}

/**
 * Generous for a real mesh: Envoy at thousands of services subscribes to
 * thousands of EDS names and repeats the whole list in every SotW ACK, at most
 * once per push per type (the push interval is 100 ms by default, so up to 50
 * requests/s when every type changes). Names are Kubernetes-derived
 * (namespace/service|port, at most a few hundred characters).
 */
export const DEFAULT_STREAM_LIMITS: StreamLimits = {
  maxNamesPerType: 16_384,
  maxNameLength: 1024,
  requestsPerSecond: 100,
  namesPerSecond: 200_000,
  maxMessageBytes: 4 * 1024 * 1024,
};

/** Requests whose names are at least this many are handled on a later turn of the event loop. */
export const YIELD_ABOVE_NAMES = 1000;

export type RefusalReason = 'too-many-names' | 'name-too-long' | 'request-rate' | 'name-rate' | 'malformed';

/** Why a stream is ended: the gRPC status, a metric label and a message naming the limit. */
export interface Refusal {
  code: Status;
  reason: RefusalReason;
  message: string;
}

/** What a request deserializer yields for a message it will not decode. */
export interface RefusedRequest {
  refused: Refusal;
}

export function isRefused(req: unknown): req is RefusedRequest {
  return typeof req === 'object' && req !== null && 'refused' in req;
}

export function tooManyNames(
  limits: Pick<StreamLimits, 'maxNamesPerType'>,
  count: number,
  typeUrl?: string,
): Refusal {
  return {
    code: Status.RESOURCE_EXHAUSTED,
    reason: 'too-many-names',
    message:
      `${count} resource names${typeUrl ? ` for ${typeUrl}` : ''} exceed the limit of ` +
      `${limits.maxNamesPerType} per type on one stream`,
  };
}

function malformed(what: string, detail: string): Refusal {
  return { code: Status.INVALID_ARGUMENT, reason: 'malformed', message: `malformed ${what}: ${detail}` };
}

/** The top-level fields of a request message that hold resource names (repeated strings or map entries). */
export interface NameFields {
  /** Message name, for errors. */
  message: string;
  fields: readonly number[];
}

export const SOTW_NAME_FIELDS: NameFields = {
  message: 'DiscoveryRequest',
  fields: [3], // resource_names
};

export const DELTA_NAME_FIELDS: NameFields = {
  message: 'DeltaDiscoveryRequest',
  // resource_names_subscribe, resource_names_unsubscribe, initial_resource_versions (map entries)
  fields: [3, 4, 5],
};

/**
 * Walks the top-level fields of an encoded request without decoding it, and
 * refuses one that holds more names than a stream may subscribe to, a name
 * longer than allowed, or broken framing: 10,000 names are counted in a
 * fraction of a millisecond, while decoding them costs milliseconds and memory.
 */
export function scanRequest(bytes: Uint8Array, names: NameFields, limits: StreamLimits): Refusal | undefined {
  let pos = 0;
  let count = 0;
  const varint = (): number => {
    let result = 0;
    let shift = 0;
    for (;;) {
      if (pos >= bytes.length) throw new Error('truncated varint');
      const b = bytes[pos++] ?? 0;
      // Past 2^53 a length cannot fit the message anyway; the bound below catches it.
      result += (b & 0x7f) * 2 ** shift;
      if ((b & 0x80) === 0) return result;
      shift += 7;
      if (shift > 63) throw new Error('varint longer than 10 bytes');
    }
  };
  // A map entry holds a key and a value (name and version): allow both at full length.
  const maxEntry = 2 * limits.maxNameLength + 16;
  try {
    while (pos < bytes.length) {
      const tag = varint();
      const field = Math.floor(tag / 8);
      const wire = tag % 8;
      if (field === 0) throw new Error('field number 0');
      switch (wire) {
        case 0:
          varint();
          break;
        case 1:
          pos += 8;
          break;
        case 5:
          pos += 4;
          break;
        case 2: {
          const len = varint();
          if (len > bytes.length - pos) throw new Error(`field ${field} runs past the end of the message`);
          if (names.fields.includes(field)) {
            count++;
            if (count > limits.maxNamesPerType) return tooManyNames(limits, count);
            const max = field === 5 && names === DELTA_NAME_FIELDS ? maxEntry : limits.maxNameLength;
            if (len > max)
              return {
                code: Status.INVALID_ARGUMENT,
                reason: 'name-too-long',
                message: `a resource name of ${len} bytes exceeds the limit of ${limits.maxNameLength}`,
              };
          }
          pos += len;
          break;
        }
        default:
          // 3 and 4 are the deprecated groups, which no xDS message uses; 6 and 7 do not exist.
          throw new Error(`wire type ${wire} of field ${field}`);
      }
      if (pos > bytes.length) throw new Error('truncated field');
    }
  } catch (e) {
    return malformed(names.message, e instanceof Error ? e.message : String(e));
  }
  return undefined;
}

/**
 * Decodes a request after scanning it; a refusal instead of a throw, so the
 * stream ends with a status that says what was wrong (grpc-js turns a
 * throwing deserializer into INTERNAL "Error deserializing request").
 */
export function decodeWithin<Req extends { encodedBytes?: number }>(
  bytes: Uint8Array,
  names: NameFields,
  limits: StreamLimits,
  decode: (bytes: Uint8Array) => Req,
): Req | RefusedRequest {
  const refused = scanRequest(bytes, names, limits);
  if (refused !== undefined) return { refused };
  try {
    const req = decode(bytes);
    req.encodedBytes = bytes.length;
    return req;
  } catch (e) {
    return { refused: malformed(names.message, e instanceof Error ? e.message : String(e)) };
  }
}

/** Per stream: the request and name rate limits (token buckets). */
export class RequestBudget {
  private readonly requests: TokenBucket;
  private readonly names: TokenBucket;

  constructor(
    private readonly limits: StreamLimits,
    now: () => number = () => performance.now(),
  ) {
    // Twice the rate at once: a (re)connecting proxy sends one request per type and ACKs in a burst.
    this.requests = new TokenBucket(limits.requestsPerSecond, 2 * limits.requestsPerSecond, now);
    // At least one full subscription of every type fits a burst.
    this.names = new TokenBucket(
      limits.namesPerSecond,
      Math.max(limits.namesPerSecond, 5 * limits.maxNamesPerType),
      now,
    );
  }

  /** Charges one request carrying `names` names; a refusal when the stream is over a rate. */
  take(names: number): Refusal | undefined {
    if (!this.requests.tryTake(1))
      return {
        code: Status.RESOURCE_EXHAUSTED,
        reason: 'request-rate',
        message: `more than ${this.limits.requestsPerSecond} requests per second on one stream`,
      };
    if (names > 0 && !this.names.tryTake(names))
      return {
        code: Status.RESOURCE_EXHAUSTED,
        reason: 'name-rate',
        message: `more than ${this.limits.namesPerSecond} resource names per second on one stream`,
      };
    return undefined;
  }
}

/** Fills unset fields with the defaults and checks every value is a positive integer. */
export function streamLimits(partial: Partial<StreamLimits> = {}): StreamLimits {
  const limits = { ...DEFAULT_STREAM_LIMITS, ...partial };
  for (const [k, v] of Object.entries(limits))
    if (!Number.isInteger(v) || v < 1)
      throw new Error(`stream limit ${k} must be a positive integer, got ${v}`);
  return limits;
}
