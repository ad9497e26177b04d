import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { copyManifests, readPods } from './manifests.js';

let root: string;
let src: string;

const POD = `# a comment worth keeping
apiVersion: v1
kind: Service
metadata: { name: web, namespace: shop }
spec:
  ports:
    - port: 14001
      targetPort: grpc
---
apiVersion: v1
kind: Pod
metadata:
  name: web-1
  namespace: shop
spec:
  containers:
    - name: web
      ports:
        - name: grpc
          containerPort: 14021
status:
  podIP: 127.0.0.21
---
apiVersion: policy.skein.dev/v1alpha1
kind: IngressBackend
metadata: { name: web, namespace: shop }
spec:
  backends: [{ name: web, port: { number: 14021, protocol: http } }]
  sources: [{ kind: IPRange, name: 10.10.0.0/16 }]
`;

before(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'skein-demo-manifests-'));
  src = path.join(root, 'src');
  await mkdir(src);
  await writeFile(path.join(src, 'web.yaml'), POD);
  await writeFile(path.join(src, 'notes.txt'), 'containerPort: 14021\n');
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

test('an offset shifts Pod containerPorts (and the IngressBackend ports naming them) only, and keeps comments', async () => {
  const to = path.join(root, 'shifted');
  await copyManifests(src, to, 1000);
  const text = await readFile(path.join(to, 'web.yaml'), 'utf8');
  assert.match(text, /# a comment worth keeping/);
  assert.match(text, /containerPort: 15021/);
  assert.match(text, /port: 14001/, 'Service ports are not workload ports');
  // An IngressBackend names the pod's port: it moves with it.
  assert.match(text, /port: \{ number: 15021, protocol: http \}/);
  assert.doesNotMatch(text, /14021/);
  assert.equal(await readFile(path.join(to, 'notes.txt'), 'utf8'), 'containerPort: 14021\n');
  assert.deepEqual(await readPods(to), [{ namespace: 'shop', name: 'web-1', ip: '127.0.0.21', port: 15021 }]);
});

test('offset 0 copies as is; an offset leaving the port range is refused', async () => {
  const same = path.join(root, 'same');
  await copyManifests(src, same, 0);
  assert.equal(await readFile(path.join(same, 'web.yaml'), 'utf8'), POD);
  await assert.rejects(copyManifests(src, path.join(root, 'bad'), 60_000), RangeError);
});
