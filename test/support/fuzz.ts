// Seeded fuzzing for the tests under test/fuzz: the shared seeded PRNG
// (prng.ts) and helpers that mutate inputs. SKEIN_FUZZ_SEED and
// SKEIN_FUZZ_CASES override the seed and the case count; a failure names the
// seed and case so it can be replayed exactly.
import { Prng } from './prng.js';

/** The shared seeded PRNG plus what fuzzing draws: bytes and hostile strings. */
export class Rng extends Prng {
  bytes(n: number): Uint8Array {
    const out = new Uint8Array(n);
    for (let i = 0; i < n; i++) out[i] = this.below(256);
    return out;
  }

  /** A string of `n` characters: printable ASCII, control characters, non-ASCII or lone surrogates. */
  string(n: number): string {
    const kind = this.below(4);
    let s = '';
    for (let i = 0; i < n; i++) {
      if (kind === 0) s += String.fromCharCode(this.between(0x20, 0x7e));
      else if (kind === 1) s += String.fromCharCode(this.between(0, 0x1f));
      else if (kind === 2) s += String.fromCodePoint(this.between(0x80, 0x10ffff));
      else s += String.fromCharCode(this.between(0xd800, 0xdfff));
    }
    return s;
  }
}

export interface FuzzConfig {
  seed: number;
  cases: number;
}

/** The seed and case count: SKEIN_FUZZ_SEED / SKEIN_FUZZ_CASES, else these defaults. */
export function fuzzConfig(defaultCases: number, defaultSeed = 20_261_202): FuzzConfig {
  const env = (name: string, fallback: number): number => {
    const v = process.env[name];
    if (v === undefined || v === '') return fallback;
    const n = Number(v);
    if (!Number.isInteger(n) || n < 0) throw new Error(`${name}=${v} is not a non-negative integer`);
    return n;
  };
  return { seed: env('SKEIN_FUZZ_SEED', defaultSeed), cases: env('SKEIN_FUZZ_CASES', defaultCases) };
}

/**
 * Runs `cases` cases, each with its own PRNG derived from the seed and the
 * case number (a case replays alone). A failure is rethrown naming both.
 */
export async function fuzz(
  name: string,
  config: FuzzConfig,
  run: (rng: Rng, i: number) => void | Promise<void>,
): Promise<void> {
  for (let i = 0; i < config.cases; i++) {
    const rng = new Rng((config.seed ^ Math.imul(i + 1, 0x9e3779b1)) >>> 0);
    try {
      await run(rng, i);
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      const e = new Error(
        `${name}: case ${i} failed (replay: SKEIN_FUZZ_SEED=${config.seed} SKEIN_FUZZ_CASES=${i + 1}): ${message}`,
      );
      e.cause = err;
      throw e;
    }
  }
}

/** A JSON value as the mutators see it. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

function randomScalar(rng: Rng): Json {
  switch (rng.below(8)) {
    case 0:
      return null;
    case 1:
      return rng.chance(0.5);
    case 2:
      return rng.pick([0, -1, 1.5, 2 ** 53, -(2 ** 31), Number.MAX_SAFE_INTEGER]);
    case 3:
      return '';
    case 4:
      return rng.string(rng.between(1, 40));
    case 5:
      return [];
    case 6:
      return {};
    default:
      return 'x'.repeat(rng.between(100, 5000));
  }
}

/** Paths to every value of a JSON document (the root is the empty path). */
function paths(
  v: Json,
  prefix: (string | number)[] = [],
  out: (string | number)[][] = [],
): (string | number)[][] {
  out.push(prefix);
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) paths(v[i] ?? null, [...prefix, i], out);
  } else if (v !== null && typeof v === 'object')
    for (const [k, c] of Object.entries(v)) paths(c, [...prefix, k], out);
  return out;
}

/**
 * A copy of `doc` with 1–4 random mutations: a value replaced by another
 * kind, a key deleted, a key added, an array emptied or blown up.
 */
export function mutateJson(rng: Rng, doc: Json): Json {
  let root: Json = structuredClone(doc);
  const n = rng.between(1, 4);
  for (let m = 0; m < n; m++) {
    const all = paths(root);
    const path = rng.pick(all);
    const op = rng.below(5);
    if (path.length === 0) {
      if (op === 0) root = randomScalar(rng);
      continue;
    }
    let parent: Json = root;
    for (const k of path.slice(0, -1)) {
      if (Array.isArray(parent) && typeof k === 'number') parent = parent[k] ?? null;
      else if (
        parent !== null &&
        typeof parent === 'object' &&
        !Array.isArray(parent) &&
        typeof k === 'string'
      )
        parent = parent[k] ?? null;
    }
    const key = path[path.length - 1];
    if (parent === null || typeof parent !== 'object' || key === undefined) continue;
    if (Array.isArray(parent) && typeof key === 'number') {
      if (op === 0) parent.splice(key, 1);
      else if (op === 1) parent.push(randomScalar(rng));
      else if (op === 2) {
        const item = parent[key] ?? null;
        for (let i = 0; i < rng.between(10, 2000); i++) parent.push(item);
      } else parent[key] = randomScalar(rng);
    } else if (!Array.isArray(parent) && typeof key === 'string') {
      if (op === 0) delete parent[key];
      else if (op === 1) parent[rng.string(rng.between(1, 12))] = randomScalar(rng);
      else parent[key] = randomScalar(rng);
    }
  }
  return root;
}

/** Text with random bytes flipped, cut short, or with garbage spliced in. */
export function mutateText(rng: Rng, text: string): string {
  const chars = [...text];
  const n = rng.between(1, 6);
  for (let m = 0; m < n && chars.length > 0; m++) {
    const at = rng.below(chars.length);
    switch (rng.below(4)) {
      case 0:
        chars.splice(at, rng.between(1, 20));
        break;
      case 1:
        chars.splice(at, 0, ...rng.string(rng.between(1, 20)));
        break;
      case 2:
        chars[at] = rng.pick([
          ':',
          '-',
          ' ',
          '\n',
          '\t',
          '{',
          '[',
          '"',
          "'",
          '&',
          '*',
          '!',
          '%',
          '|',
          '>',
          '#',
        ]);
        break;
      default:
        chars.length = at;
    }
  }
  return chars.join('');
}
