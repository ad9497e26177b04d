// The controller image works: unpacked and chrooted into (we are root), its
// Node, CLI and iptables run, and the injector's init container command applies
// the rules pkg/injector renders (nat REDIRECT, owner match) in a throwaway
// network namespace. Also: non-root user, labels, the size budget.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { defaultProxyServedPorts, renderIptablesRules } from '../../pkg/injector/iptables.js';
import { IPTABLES_RULES_ENV } from '../../pkg/injector/mutate.js';
import { AGENT_COMMAND } from '../../pkg/injector/proxyless.js';
import { inRoot, run, type Summary, summary, unpack, unpackedInSuite } from './images.js';

/** The budget for the controller image's layers, uncompressed (docs/design.md, "Images"). */
const BUDGET = 150e6;

const found = await summary('controller');
const rootless = process.getuid?.() !== 0 ? 'needs root (chroot, network namespaces)' : undefined;

describe('the controller image', {
  skip: typeof found === 'string' ? found : rootless,
  timeout: 120_000,
}, () => {
  const s = found as Summary;
  const image = unpackedInSuite(() => s.file, 'skein-image-');

  test('runs as 1000:1000, a user /etc/passwd knows, with its labels', async () => {
    assert.equal(image.config.config.User, '1000:1000');
    assert.equal(image.config.architecture, 'amd64');
    assert.match(await readFile(path.join(image.rootfs, 'etc/passwd'), 'utf8'), /^skein:x:1000:1000:/m);
    assert.match(await readFile(path.join(image.rootfs, 'etc/group'), 'utf8'), /^skein:x:1000:/m);
    const labels = image.config.config.Labels ?? {};
    assert.equal(labels['org.opencontainers.image.version'], s.ref.split(':').at(-1));
    assert.match(labels['org.opencontainers.image.revision'] ?? '', /^[0-9a-f]{40}$|^unknown$/);
    assert.match(labels['dev.skein.debian-packages'] ?? '', /libc6=\S+ .*iptables=\S+/);
  });

  test('node, the skein CLI and iptables run inside it', async () => {
    assert.match((await inRoot(image.rootfs, ['/usr/local/bin/node', '--version'])).stdout, /^v20\./);
    const version = await inRoot(image.rootfs, [
      '/usr/local/bin/node',
      '/app/dist/cmd/skein/main.js',
      'version',
    ]);
    assert.match(version.stdout, /^skein \d+\.\d+\.\d+/);
    const ipt = await inRoot(image.rootfs, [
      '/bin/sh',
      '-c',
      'iptables-restore --version; iptables-save --version',
    ]);
    assert.match(ipt.stdout, /iptables-restore v\S+ \(legacy\)\niptables-save v\S+ \(legacy\)/);
  });

  test('skein-agent (the injected proxyless sidecar) starts from it', async () => {
    // The command the injector gives the skein-agent container.
    const help = await inRoot(image.rootfs, [...AGENT_COMMAND, '--help']);
    assert.match(help.stdout, /^Usage: skein-agent --controller <host:port>/);
  });

  test("the init container's command applies the injector's rules in a pod network namespace", async (t) => {
    const ns = `skein-img-${randomBytes(4).toString('hex')}`;
    await run('ip', ['netns', 'add', ns]);
    t.after(() => run('ip', ['netns', 'del', ns]));
    const rules = renderIptablesRules({
      exclusions: { inboundPorts: [8081], outboundPorts: [5432], outboundIpRanges: ['10.0.0.0/8'] },
      proxyServedPorts: defaultProxyServedPorts([]),
    });
    // pkg/injector/mutate.ts's initContainer command, verbatim but for the env var's name.
    const command = `printf '%s\\n' "$${IPTABLES_RULES_ENV}" | iptables-restore && iptables-save -t nat`;
    const { stdout } = await inRoot(
      image.rootfs,
      ['/bin/sh', '-c', command],
      { [IPTABLES_RULES_ENV]: rules },
      ns,
    );
    assert.match(stdout, /-A SKEIN_PROXY_REDIRECT -p tcp -j REDIRECT --to-ports 15001/);
    assert.match(stdout, /-m owner --uid-owner 1500 -j RETURN/);
    assert.match(stdout, /--dport 8081 -j RETURN/);
  });

  test(`fits the size budget (${BUDGET / 1e6} MB uncompressed)`, (t) => {
    t.diagnostic(
      `uncompressed ${(s.uncompressedSize / 1e6).toFixed(1)} MB, compressed ${(s.compressedSize / 1e6).toFixed(1)} MB`,
    );
    for (const l of s.layers)
      t.diagnostic(
        `${l.comment}: ${(l.size / 1e6).toFixed(1)} MB / ${(l.uncompressedSize / 1e6).toFixed(1)} MB`,
      );
    assert.ok(s.uncompressedSize <= BUDGET, `${s.uncompressedSize} bytes > ${BUDGET}`);
  });
});

const envoy = await summary('envoy');
describe('the envoy test image', {
  skip: typeof envoy === 'string' ? envoy : rootless,
  timeout: 60_000,
}, () => {
  test('runs envoy --version and says it is test-only', async (t) => {
    const dir = await mkdtemp(path.join(tmpdir(), 'skein-image-'));
    t.after(() => rm(dir, { recursive: true, force: true }));
    const { config, rootfs } = await unpack((envoy as Summary).file, dir);
    const { stdout } = await inRoot(rootfs, ['/usr/local/bin/envoy', '--version']);
    assert.match(stdout, /version: \w+\/1\.40\.0\//);
    assert.equal(config.config.Labels?.['dev.skein.test-only'], 'true');
  });
});
