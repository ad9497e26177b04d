import { createHash } from 'node:crypto';
import type { Resource } from '../../envoy/types.js';
import { BufferWriter } from '../proto/buffer-writer.js';
import { encodeInto } from '../proto/direct-encode.js';
import { messageType } from '../proto/root.js';

/** One xDS resource, encoded once and shared by every stream that sends it. */
export interface EncodedResource {
  readonly typeUrl: string;
  readonly name: string;
  /** sha256 over the name and the encoded message: identifies the content. */
  readonly hash: string;
  /**
   * The resource as one complete `DiscoveryResponse.resources` entry (field 2:
   * tag, length, `Any{type_url, value}`), so responses are plain concatenations.
   */
  readonly framed: Uint8Array;
}

// DiscoveryResponse.resources = 2 and Any.type_url = 1 / Any.value = 2, all length-delimited.
const TAG_RESOURCES = (2 << 3) | 2;
const TAG_ANY_TYPE_URL = (1 << 3) | 2;
const TAG_ANY_VALUE = (2 << 3) | 2;

export function hashContent(name: string, value: Uint8Array): string {
  return createHash('sha256').update(name).update('\0').update(value).digest('base64url');
}

const frame = new BufferWriter();

/**
 * Encodes one resource (no sharing) straight into its framed `resources`
 * entry, hashing the message's bytes where they were written: one copy, the
 * one kept. Throws when the message does not fit its type.
 */
export function encodeResource(resource: Resource): EncodedResource {
  frame.reset();
  frame
    .uint32(TAG_RESOURCES)
    .fork()
    .uint32(TAG_ANY_TYPE_URL)
    .string(resource.typeUrl)
    .uint32(TAG_ANY_VALUE)
    .fork();
  encodeInto(frame, messageType(resource.typeUrl), resource.message);
  const valueBytes = frame.ldelim();
  frame.ldelim();
  const hash = hashContent(resource.name, frame.view(frame.length - valueBytes));
  return { typeUrl: resource.typeUrl, name: resource.name, hash, framed: frame.finish() };
}

interface InternEntry {
  readonly resource: EncodedResource;
  /** `<typeUrl> <hash>`, its key in the table. */
  readonly key: string;
  /** Last epoch in which some generation produced this content. */
  epoch: number;
  /** False once swept from the table (a message may still point at it). */
  live: boolean;
}

/**
 * Interns encoded resources by (typeUrl, content hash): identical resources
 * generated for different proxy groups or view versions share one byte array.
 * Eviction is a generation sweep: `advance()` starts a new epoch and drops
 * entries nobody produced during the previous one, so memory follows the
 * live configuration rather than its history.
 */
export class ResourceInterner {
  private readonly entries = new Map<string, InternEntry>();
  // Generators return the same (immutable) message object for an unchanged
  // resource, to many proxies within a view and across views (they memoise on
  // the MeshView's stable answers); skip re-encoding and re-hashing it.
  private readonly byMessage = new WeakMap<object, InternEntry>();
  private epoch = 0;
  /** How many resources were encoded (and hashed) so far: the work the message identity did not save. */
  encodes = 0;

  intern(resource: Resource): EncodedResource {
    const known = this.byMessage.get(resource.message);
    if (known && known.resource.name === resource.name && known.resource.typeUrl === resource.typeUrl) {
      // The common case on every push: O(1), no key built.
      if (known.live) {
        known.epoch = this.epoch;
        return known.resource;
      }
      const entry = this.add(known.resource, known.key);
      this.byMessage.set(resource.message, entry);
      return entry.resource;
    }
    const encoded = encodeResource(resource);
    this.encodes++;
    const entry = this.add(encoded, `${encoded.typeUrl} ${encoded.hash}`);
    this.byMessage.set(resource.message, entry);
    return entry.resource;
  }

  /** Starts a new epoch; drops entries not produced in the previous or current one. Returns how many. */
  advance(): number {
    this.epoch++;
    let evicted = 0;
    for (const [key, entry] of this.entries) {
      if (entry.epoch < this.epoch - 1) {
        this.entries.delete(key);
        entry.live = false;
        evicted++;
      }
    }
    return evicted;
  }

  get size(): number {
    return this.entries.size;
  }

  /** The live entry for this content (an equal earlier one wins), touched in this epoch. */
  private add(resource: EncodedResource, key: string): InternEntry {
    let entry = this.entries.get(key);
    if (entry === undefined) {
      entry = { resource, key, epoch: this.epoch, live: true };
      this.entries.set(key, entry);
    }
    entry.epoch = this.epoch;
    return entry;
  }
}
