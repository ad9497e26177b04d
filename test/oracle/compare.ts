// How the oracle compares what two proxies hold. Everything is compared by
// content (decoded proto in canonical JSON) except what legitimately differs
// between two controllers on the same CA: a leaf certificate is issued afresh
// (new key, serial and validity), so it is compared by subject, SANs and
// issuer; private keys are not compared at all. CA certificates are the same
// bytes on both sides and are compared by fingerprint. Version strings and
// nonces are not part of the resources, so they never enter the comparison.
import { X509Certificate } from 'node:crypto';
import type { ProtoObject, ProtoValue } from '../../pkg/envoy/types.js';

const PEM_CERT = /-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g;

function describePem(text: string): string | undefined {
  if (text.includes('PRIVATE KEY-----')) return '<private key>';
  const certs = text.match(PEM_CERT);
  if (!certs) return undefined;
  return certs
    .map((pem) => {
      const c = new X509Certificate(pem);
      return c.ca
        ? `CA ${c.fingerprint256}`
        : `leaf subject=${c.subject} san=${c.subjectAltName ?? ''} issuer=${c.issuer}`;
    })
    .join(' + ');
}

/** A value with certificates and keys replaced by what must match (see the header). */
export function normalize(v: ProtoValue, key = ''): ProtoValue {
  if (typeof v === 'string') {
    const text = key === 'inline_bytes' ? Buffer.from(v, 'base64').toString('utf8') : v;
    return describePem(text) ?? v;
  }
  if (Array.isArray(v)) return v.map((x) => normalize(x));
  if (v === null || typeof v !== 'object') return v;
  const out: ProtoObject = {};
  for (const k of Object.keys(v).sort()) {
    const child = v[k];
    if (child !== undefined) out[k] = normalize(child, k);
  }
  return out;
}

export type Held = ReadonlyMap<string, ReadonlyMap<string, ProtoObject>>;

/** Differences between two proxies' holdings, one line each; empty when equal. */
export function differences(live: Held, fresh: Held): string[] {
  const out: string[] = [];
  for (const t of new Set([...live.keys(), ...fresh.keys()])) {
    const type = t.split('.').pop() ?? t;
    const a = live.get(t) ?? new Map<string, ProtoObject>();
    const b = fresh.get(t) ?? new Map<string, ProtoObject>();
    for (const name of [...new Set([...a.keys(), ...b.keys()])].sort()) {
      const x = a.get(name);
      const y = b.get(name);
      if (x === undefined) out.push(`${type} ${name}: only the fresh controller serves it`);
      else if (y === undefined) out.push(`${type} ${name}: only the live controller serves it`);
      else {
        const sx = JSON.stringify(normalize(x));
        const sy = JSON.stringify(normalize(y));
        if (sx !== sy) out.push(`${type} ${name}: content differs: ${firstDifference(sx, sy)}`);
      }
    }
  }
  return out;
}

function firstDifference(a: string, b: string): string {
  let i = 0;
  while (i < a.length && a[i] === b[i]) i++;
  const from = Math.max(0, i - 120);
  return `live …${a.slice(from, i + 160)}… fresh …${b.slice(from, i + 160)}…`;
}
