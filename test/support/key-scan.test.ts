import assert from 'node:assert/strict';
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { findKeys, scanLogDir } from './key-scan.js';

// Keys made here, never printed: a failing assertion names only kinds and labels.
const ec = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 });
const ed = generateKeyPairSync('ed25519');

const pem = (k: KeyObject, type: 'pkcs8' | 'pkcs1' | 'sec1') => String(k.export({ format: 'pem', type }));
const der64 = (k: KeyObject, type: 'pkcs8' | 'pkcs1' | 'sec1') =>
  (k.export({ format: 'der', type }) as Buffer).toString('base64');
/** As pino writes a string field: one JSON line, newlines escaped. */
const logLine = (field: string, value: string) =>
  JSON.stringify({ level: 30, msg: 'issued', [field]: value });
const kinds = (line: string) => findKeys(line).map((f) => `${f.kind}:${f.label}`);

test('PEM private keys in a JSON log line are found, whatever their PEM label', () => {
  assert.deepEqual(kinds(logLine('key', pem(ec.privateKey, 'pkcs8'))), ['pem:PRIVATE KEY']);
  assert.deepEqual(kinds(logLine('key', pem(ec.privateKey, 'sec1'))), ['pem:EC PRIVATE KEY']);
  assert.deepEqual(kinds(logLine('key', pem(rsa.privateKey, 'pkcs1'))), ['pem:RSA PRIVATE KEY']);
  const encrypted = String(
    ec.privateKey.export({ format: 'pem', type: 'pkcs8', cipher: 'aes-128-cbc', passphrase: 'x' }),
  );
  assert.deepEqual(kinds(logLine('key', encrypted)), ['pem:ENCRYPTED PRIVATE KEY']);
});

test('a PEM key base64-encoded again (a Secret data field) is found', () => {
  const secretData = Buffer.from(pem(ec.privateKey, 'pkcs8')).toString('base64');
  assert.deepEqual(kinds(`body: {"data":{"tls.key":"${secretData}"}}`), ['base64-pem:PRIVATE KEY']);
});

test('bare base64 DER keys are found: PKCS#8 (EC, RSA, Ed25519), PKCS#1, SEC1', () => {
  assert.deepEqual(kinds(logLine('der', der64(ec.privateKey, 'pkcs8'))), ['base64-der:pkcs8']);
  assert.deepEqual(kinds(logLine('der', der64(rsa.privateKey, 'pkcs8'))), ['base64-der:pkcs8']);
  assert.deepEqual(kinds(logLine('der', der64(ed.privateKey, 'pkcs8'))), ['base64-der:pkcs8']);
  assert.deepEqual(kinds(logLine('der', der64(rsa.privateKey, 'pkcs1'))), ['base64-der:pkcs1']);
  assert.deepEqual(kinds(logLine('der', der64(ec.privateKey, 'sec1'))), ['base64-der:sec1']);
});

test('public material is not a finding: certificates-like DER, public keys, PEM public keys, hashes', () => {
  const spki = (ec.publicKey.export({ format: 'der', type: 'spki' }) as Buffer).toString('base64');
  const rsaPublic = (rsa.publicKey.export({ format: 'der', type: 'pkcs1' }) as Buffer).toString('base64');
  const publicPem = String(ec.publicKey.export({ format: 'pem', type: 'spki' }));
  for (const line of [
    logLine('spki', spki),
    logLine('rsaPublic', rsaPublic),
    logLine('pem', publicPem),
    logLine('cert', '-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----\n'),
    logLine('hash', 'A'.repeat(43) + 'w'.repeat(40)),
    'the words PRIVATE KEY without a PEM header',
  ])
    assert.deepEqual(kinds(line), [], line.slice(0, 60));
});

test('scanLogDir names the file and line of a planted key, and only that one', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'skein-key-scan-'));
  try {
    await writeFile(path.join(dir, 'clean.log'), `${logLine('msg', 'ready')}\n`.repeat(50));
    const planted = [
      logLine('msg', 'ready'),
      logLine('msg', 'ready'),
      logLine('key', pem(ed.privateKey, 'pkcs8')),
    ];
    await writeFile(path.join(dir, 'children-1.log'), `${planted.join('\n')}\n`);
    const result = await scanLogDir(dir);
    assert.equal(result.files, 2);
    assert.equal(result.lines, 53);
    assert.deepEqual(
      result.findings.map((f) => ({ file: path.basename(f.file), line: f.line, kind: f.kind })),
      [{ file: 'children-1.log', line: 3, kind: 'pem' }],
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
