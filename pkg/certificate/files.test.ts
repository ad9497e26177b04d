import assert from 'node:assert/strict';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { once } from 'node:events';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { silentLogger } from '../logger/logger.js';
import { BuiltinCA } from './builtin.js';
import { readWorkloadCert, WorkloadCertWriter, workloadCertsDir } from './files.js';
import { CertificateManager } from './manager.js';

const bookstore = { namespace: 'bookstore', serviceAccount: 'bookstore-v1' };
const bookbuyer = { namespace: 'bookbuyer', serviceAccount: 'bookbuyer' };

describe('WorkloadCertWriter', () => {
  let ca: BuiltinCA;
  let root: string;
  let n = 0;
  const cleanups: (() => unknown)[] = [];
  // Renewal timers are unref'd, so the test holds the event loop open itself.
  let keepAlive: NodeJS.Timeout;

  before(async () => {
    ca = await BuiltinCA.create();
    root = await mkdtemp(join(tmpdir(), 'skein-wl-'));
    keepAlive = setInterval(() => {}, 1000);
  });
  after(async () => {
    for (const c of cleanups) await c();
    clearInterval(keepAlive);
    await rm(root, { recursive: true, force: true });
  });

  function setup(validityMs = 60 * 60 * 1000): {
    manager: CertificateManager;
    writer: WorkloadCertWriter;
    dir: string;
  } {
    const manager = new CertificateManager({
      ca,
      validityMs,
      trustDomain: 'cluster.local',
      logger: silentLogger(),
      minRenewMarginMs: 0,
    });
    const dir = workloadCertsDir(join(root, `state-${n++}`));
    const writer = new WorkloadCertWriter({ manager, dir, logger: silentLogger(), retryInitialMs: 50 });
    cleanups.push(
      () => manager.stop(),
      () => writer.stop(),
    );
    return { manager, writer, dir };
  }

  it('lays files out under <dir>/<ns>/<sa>', () => {
    assert.equal(workloadCertsDir('/var/skein'), '/var/skein/workloads');
    assert.deepEqual(WorkloadCertWriter.pathsFor('/var/skein/workloads', bookstore), {
      dir: '/var/skein/workloads/bookstore/bookstore-v1',
      certFile: '/var/skein/workloads/bookstore/bookstore-v1/cert.pem',
      keyFile: '/var/skein/workloads/bookstore/bookstore-v1/key.pem',
      caFile: '/var/skein/workloads/bookstore/bookstore-v1/ca.pem',
    });
    assert.throws(
      () => WorkloadCertWriter.pathsFor('/x', { namespace: '..', serviceAccount: 'a' }),
      /namespace/,
    );
    assert.throws(
      () => WorkloadCertWriter.pathsFor('/x', { namespace: 'a', serviceAccount: 'b/c' }),
      /account/,
    );
  });

  it('writes the certificate, key (0600) and CA of a tracked identity', async () => {
    const { manager, writer, dir } = setup();
    writer.start();
    const paths = await writer.track(bookstore);
    assert.deepEqual(paths, WorkloadCertWriter.pathsFor(dir, bookstore));
    const issued = manager.serviceCertificate('bookstore/bookstore-v1');
    assert.ok(issued);
    assert.equal(await readFile(paths.certFile, 'utf8'), issued.certPem);
    assert.equal(await readFile(paths.keyFile, 'utf8'), issued.keyPem);
    assert.equal(await readFile(paths.caFile, 'utf8'), ca.trustBundlePem);
    assert.equal((await stat(paths.keyFile)).mode & 0o777, 0o600);
    const cert = new X509Certificate(await readFile(paths.certFile));
    assert.ok(cert.checkPrivateKey(createPrivateKey(await readFile(paths.keyFile))));
    assert.ok(cert.checkIssued(new X509Certificate(await readFile(paths.caFile))));
    // No temp files are left next to them.
    assert.deepEqual((await readdir(paths.dir)).sort(), ['ca.pem', 'cert.pem', 'key.pem']);
  });

  it('rewrites the files when the manager rotates, and never exposes a torn file', async () => {
    const { manager, writer } = setup(400);
    writer.start();
    const paths = await writer.track(bookstore);
    const firstSerial = manager.serviceCertificate('bookstore/bookstore-v1')?.serialNumber;
    let rewrites = 0;
    writer.on('written', () => {
      rewrites += 1;
    });
    // Read as a file_watcher would, as fast as possible, across at least two rotations.
    let reads = 0;
    while (rewrites < 2) {
      const [certPem, keyPem] = await Promise.all([
        readFile(paths.certFile, 'utf8'),
        readFile(paths.keyFile, 'utf8'),
      ]);
      assert.doesNotThrow(() => new X509Certificate(certPem));
      assert.doesNotThrow(() => createPrivateKey(keyPem));
      reads += 1;
    }
    assert.ok(reads > 10);
    const current = manager.serviceCertificate('bookstore/bookstore-v1');
    assert.ok(current);
    assert.notEqual(current.serialNumber, firstSerial);
    // The last write may still be on its way: wait for the file to hold the current certificate.
    while ((await readFile(paths.certFile, 'utf8')) !== current.certPem) await once(writer, 'written');
    assert.equal(await readFile(paths.keyFile, 'utf8'), current.keyPem);
  });

  it('stops rewriting untracked identities and after stop()', async () => {
    const { manager, writer } = setup(400);
    writer.start();
    const storePaths = await writer.track(bookstore);
    const buyerPaths = await writer.track(bookbuyer);
    assert.equal(writer.untrack(bookbuyer), true);
    assert.equal(writer.untrack(bookbuyer), false);
    const buyerCert = await readFile(buyerPaths.certFile, 'utf8');
    const [key] = await once(writer, 'written');
    assert.equal(key, 'bookstore/bookstore-v1');
    assert.equal(await readFile(buyerPaths.certFile, 'utf8'), buyerCert);
    assert.notEqual(manager.serviceCertificate('bookbuyer/bookbuyer')?.certPem, undefined);

    await writer.stop();
    const storeCert = await readFile(storePaths.certFile, 'utf8');
    await once(manager, 'rotated');
    assert.equal(await readFile(storePaths.certFile, 'utf8'), storeCert);
  });

  it('reports a failed write and retries it', async () => {
    const { writer, dir } = setup();
    writer.start();
    // A plain file where the namespace folder belongs makes the write fail, even for root.
    const nsPath = join(dir, bookstore.namespace);
    await mkdir(dir, { recursive: true });
    await writeFile(nsPath, 'in the way');
    await assert.rejects(writer.track(bookstore), /ENOTDIR|EEXIST/);
    const written = once(writer, 'written');
    await rm(nsPath);
    const [key, paths] = await written;
    assert.equal(key, 'bookstore/bookstore-v1');
    assert.ok(new X509Certificate(await readFile(paths.certFile)));
  });

  it('a restarted writer leaves files that already hold the adopted certificate untouched', async () => {
    const { writer, dir } = setup();
    writer.start();
    const paths = await writer.track(bookstore);
    const before = await stat(paths.certFile);
    const first = await readFile(paths.certFile, 'utf8');
    // The next run: a manager that loads from the files, a new writer on the same folder.
    const manager = new CertificateManager({
      ca,
      validityMs: 60 * 60 * 1000,
      trustDomain: 'cluster.local',
      logger: silentLogger(),
      load: (id) => readWorkloadCert(dir, id, ca.trustBundlePem),
    });
    const again = new WorkloadCertWriter({ manager, dir, logger: silentLogger() });
    cleanups.push(
      () => manager.stop(),
      () => again.stop(),
    );
    again.start();
    const written = once(again, 'written');
    assert.deepEqual(await again.track(bookstore), paths);
    await written;
    assert.equal(manager.serviceCertificate('bookstore/bookstore-v1')?.certPem, first);
    const afterStat = await stat(paths.certFile);
    assert.equal(afterStat.ino, before.ino);
    assert.equal(afterStat.mtimeMs, before.mtimeMs);
    // A CA file naming another CA is not read as ours.
    assert.equal(await readWorkloadCert(dir, bookstore, 'another CA'), undefined);
    assert.equal(await readWorkloadCert(dir, bookbuyer, ca.trustBundlePem), undefined);
  });
});
