import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Pod, Service } from '../../model/objects.js';
import { deriveEndpointSlices, deriveServiceSlices, resolveTargetPort, SliceDeriver } from './endpoints.js';

function svc(
  name: string,
  selector: Record<string, string> | undefined,
  ports: Service['spec']['ports'],
): Service {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: 'shop' },
    spec: { ...(selector ? { selector } : {}), ports },
  };
}

function pod(
  name: string,
  labels: Record<string, string>,
  status: Pod['status'],
  containerPorts: { name?: string; containerPort: number }[] = [],
  namespace = 'shop',
): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace, labels },
    spec: { containers: [{ name: 'app', ports: containerPorts }] },
    status,
  };
}

describe('derived EndpointSlices', () => {
  it('selects running pods with an IP, by labels and namespace', () => {
    const s = svc('web', { app: 'web' }, [{ name: 'http', port: 80, targetPort: 8080 }]);
    const slices = deriveEndpointSlices(
      [s],
      [
        pod('web-b', { app: 'web', v: '1' }, { phase: 'Running', podIP: '10.0.0.2' }),
        pod(
          'web-a',
          { app: 'web' },
          { phase: 'Running', podIP: '10.0.0.1', conditions: [{ type: 'Ready', status: 'False' }] },
        ),
        pod('web-pending', { app: 'web' }, { phase: 'Pending' }),
        pod('web-done', { app: 'web' }, { phase: 'Succeeded', podIP: '10.0.0.9' }),
        pod('other', { app: 'db' }, { phase: 'Running', podIP: '10.0.0.3' }),
        pod('web-elsewhere', { app: 'web' }, { phase: 'Running', podIP: '10.0.0.4' }, [], 'other-ns'),
      ],
    );
    assert.equal(slices.length, 1);
    const slice = slices[0];
    assert.ok(slice);
    assert.deepEqual(slice.metadata, {
      name: 'web-local',
      namespace: 'shop',
      labels: {
        'kubernetes.io/service-name': 'web',
        'endpointslice.kubernetes.io/managed-by': 'skein.dev/local-registry',
      },
    });
    assert.equal(slice.addressType, 'IPv4');
    assert.deepEqual(slice.ports, [{ name: 'http', port: 8080, protocol: 'TCP' }]);
    assert.deepEqual(slice.endpoints, [
      {
        addresses: ['10.0.0.1'],
        conditions: { ready: false, serving: false, terminating: false },
        targetRef: { kind: 'Pod', name: 'web-a', namespace: 'shop' },
      },
      {
        addresses: ['10.0.0.2'],
        conditions: { ready: true, serving: true, terminating: false },
        targetRef: { kind: 'Pod', name: 'web-b', namespace: 'shop' },
      },
    ]);
  });

  it('resolves named target ports through container ports, one slice per port set', () => {
    const s = svc('api', { app: 'api' }, [
      { name: 'grpc', port: 9000, targetPort: 'grpc-api', appProtocol: 'grpc' },
      { name: 'metrics', port: 9100 },
    ]);
    const slices = deriveServiceSlices(s, [
      pod('api-1', { app: 'api' }, { podIP: '10.0.0.1' }, [{ name: 'grpc-api', containerPort: 14001 }]),
      pod('api-2', { app: 'api' }, { podIP: '10.0.0.2' }, [{ name: 'grpc-api', containerPort: 15001 }]),
      pod('api-3', { app: 'api' }, { podIP: '10.0.0.3' }, [{ name: 'grpc-api', containerPort: 14001 }]),
    ]);
    assert.deepEqual(
      slices.map((sl) => [
        sl.metadata.name,
        sl.ports?.map((p) => p.port),
        sl.endpoints.map((e) => e.addresses[0]),
      ]),
      [
        ['api-local', [14001, 9100], ['10.0.0.1', '10.0.0.3']],
        ['api-local-2', [15001, 9100], ['10.0.0.2']],
      ],
    );
    assert.equal(slices[0]?.ports?.[0]?.appProtocol, 'grpc');
  });

  it('leaves out a named port a pod does not have, and splits IP families', () => {
    const sp = { name: 'grpc', port: 9000, targetPort: 'grpc-api' };
    assert.equal(resolveTargetPort(sp, pod('p', {}, {}, [{ name: 'other', containerPort: 1 }])), undefined);
    assert.equal(resolveTargetPort({ port: 80 }, pod('p', {}, {})), 80);
    assert.equal(resolveTargetPort({ port: 80, targetPort: '8080' }, pod('p', {}, {})), 8080);
    const slices = deriveServiceSlices(svc('x', { app: 'x' }, [{ port: 80 }]), [
      pod('x-1', { app: 'x' }, { podIP: '10.0.0.1', podIPs: [{ ip: '10.0.0.1' }, { ip: 'fd00::1' }] }),
    ]);
    assert.deepEqual(
      slices.map((s) => [s.metadata.name, s.addressType, s.endpoints[0]?.addresses]),
      [
        ['x-local', 'IPv4', ['10.0.0.1']],
        ['x-local-2', 'IPv6', ['fd00::1']],
      ],
    );
  });

  it('gives a selector service without pods an empty slice, and a selectorless one none', () => {
    assert.deepEqual(
      deriveEndpointSlices([svc('lonely', { app: 'lonely' }, [{ port: 80 }])], []).map((s) => [
        s.metadata.name,
        s.endpoints.length,
      ]),
      [['lonely-local', 0]],
    );
    assert.deepEqual(deriveEndpointSlices([svc('external', undefined, [{ port: 80 }])], []), []);
  });

  it('matches every pair of a multi-label selector, whichever pair is rarest', () => {
    const s = svc('front', { app: 'shop', tier: 'front' }, [{ port: 80 }]);
    const running = (ip: string): Pod['status'] => ({ phase: 'Running', podIP: ip });
    const names = deriveEndpointSlices(
      [s],
      [
        pod('a', { app: 'shop', tier: 'front' }, running('10.0.0.1')),
        pod('b', { app: 'shop', tier: 'back' }, running('10.0.0.2')),
        pod('c', { app: 'blog', tier: 'front' }, running('10.0.0.3')),
        pod('d', { app: 'shop' }, running('10.0.0.4')),
        pod('e', { app: 'shop' }, running('10.0.0.5')),
        pod('f', { tier: 'front', app: 'shop', extra: 'x' }, running('10.0.0.6')),
      ],
    ).flatMap((sl) => sl.endpoints.map((e) => e.targetRef?.name));
    assert.deepEqual(names, ['a', 'f']);
  });
});

describe('SliceDeriver', () => {
  const running = (ip: string): Pod['status'] => ({ phase: 'Running', podIP: ip });

  it('keeps the slice objects of a Service whose object and pods are unchanged, and re-derives one whose pods changed', () => {
    const web = svc('web', { app: 'web' }, [{ port: 80 }]);
    const db = svc('db', { app: 'db' }, [{ port: 5432 }]);
    const webPod = pod('web-1', { app: 'web' }, running('10.0.0.1'));
    const dbPod = pod('db-1', { app: 'db' }, running('10.0.0.2'));
    const d = new SliceDeriver();
    const first = d.derive([web, db], [webPod, dbPod]);
    // db's pod is re-read (a new object): only db is derived again.
    const dbPod2 = pod('db-1', { app: 'db' }, running('10.0.0.3'));
    const second = d.derive([web, db], [webPod, dbPod2]);
    assert.equal(second[0], first[0], 'web keeps its slice object');
    assert.notEqual(second[1], first[1]);
    assert.deepEqual(second[1]?.endpoints[0]?.addresses, ['10.0.0.3']);
    // A new pod joins web; a Service object re-read re-derives even with the same pods.
    const webPod2 = pod('web-2', { app: 'web' }, running('10.0.0.4'));
    const third = d.derive([web, { ...db }], [webPod2, webPod, dbPod2]);
    assert.deepEqual(
      third[0]?.endpoints.map((e) => e.targetRef?.name),
      ['web-1', 'web-2'],
    );
    assert.notEqual(third[1], second[1]);
    assert.deepEqual(third[1], second[1]);
  });

  it('drops a pod that stops matching or ends, and forgets deleted Services', () => {
    const web = svc('web', { app: 'web' }, [{ port: 80 }]);
    const d = new SliceDeriver();
    assert.equal(d.derive([web], [pod('w', { app: 'web' }, running('10.0.0.1'))])[0]?.endpoints.length, 1);
    assert.equal(d.derive([web], [pod('w', { app: 'other' }, running('10.0.0.1'))])[0]?.endpoints.length, 0);
    assert.equal(
      d.derive([web], [pod('w', { app: 'web' }, { phase: 'Failed', podIP: '10.0.0.1' })])[0]?.endpoints
        .length,
      0,
    );
    assert.deepEqual(d.derive([], [pod('w', { app: 'web' }, running('10.0.0.1'))]), []);
  });
});
