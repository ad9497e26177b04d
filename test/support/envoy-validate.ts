// Runs Envoy's own validation rules over encoded xDS resources: the Go tool in
// test/envoyvalidate (go-control-plane's ValidateAll, recursing into every
// nested Any), built by `make envoyvalidate-bin`.
import { spawn } from 'node:child_process';
import { access } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Resource } from '../../pkg/envoy/types.js';
import { encodeMessage } from '../../pkg/xds/proto/codec.js';

// dist/test/support → repo root (the binary is never copied into dist/).
const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
export const ENVOYVALIDATE_BIN = path.join(repoRoot, 'test', 'envoyvalidate', 'bin', 'envoyvalidate');

/** One resource as it travels in a DiscoveryResponse's Any. */
export interface EncodedResource {
  typeUrl: string;
  bytes: Uint8Array;
  /** Printed before each of this resource's violations (e.g. which proxy it was for). */
  label?: string;
}

/** Generator output encoded exactly as the server encodes it for the wire. */
export function encodeResources(resources: readonly Resource[], label?: string): EncodedResource[] {
  return resources.map((r) => ({
    typeUrl: r.typeUrl,
    bytes: encodeMessage(r.typeUrl, r.message),
    ...(label === undefined ? {} : { label }),
  }));
}

/**
 * Every violation of Envoy's validation rules in the given resources, one line
 * each (`[label ]<Type> "<name>": <path>: <problem>`); empty when all pass.
 * Rejects when the tool is missing or cannot read its input.
 */
export async function validateWithEnvoy(resources: readonly EncodedResource[]): Promise<string[]> {
  try {
    await access(ENVOYVALIDATE_BIN);
  } catch {
    throw new Error(`${ENVOYVALIDATE_BIN} is missing: run \`make envoyvalidate-bin\``);
  }
  const input = JSON.stringify({
    resources: resources.map((r) => ({
      typeUrl: r.typeUrl,
      value: Buffer.from(r.bytes).toString('base64'),
      ...(r.label === undefined ? {} : { label: r.label }),
    })),
  });
  const child = spawn(ENVOYVALIDATE_BIN, [], { stdio: ['pipe', 'pipe', 'pipe'] });
  const stdout: Buffer[] = [];
  const stderr: Buffer[] = [];
  child.stdout.on('data', (b: Buffer) => stdout.push(b));
  child.stderr.on('data', (b: Buffer) => stderr.push(b));
  // A write error (the tool exited early) shows in its exit status.
  child.stdin.on('error', () => {});
  const code = await new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (c) => resolve(c));
    child.stdin.end(input);
  });
  const out = Buffer.concat(stdout).toString('utf8');
  // 0: clean; 1: violations on stdout; anything else: the tool itself failed.
  if (code !== 0 && code !== 1) {
    throw new Error(`envoyvalidate exited ${code}: ${Buffer.concat(stderr).toString('utf8').trim()}`);
  }
  const lines = out.split('\n').filter((l) => l !== '');
  if (code === 1 && lines.length === 0) throw new Error('envoyvalidate failed without naming a violation');
  return lines;
}
