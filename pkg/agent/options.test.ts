import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAgentArgs } from './options.js';

describe('parseAgentArgs', () => {
  it('defaults to the injected pod layout: the Secret under /etc/skein, the socket under /var/run/skein', () => {
    assert.deepEqual(
      parseAgentArgs(['--controller', 'skein-controller.skein-system.svc.cluster.local:15128']),
      {
        controller: 'skein-controller.skein-system.svc.cluster.local:15128',
        serverName: 'skein-controller.skein-system.svc.cluster.local',
        listen: { unix: '/var/run/skein/ads.sock' },
        credentials: {
          certFile: '/etc/skein/tls.crt',
          keyFile: '/etc/skein/tls.key',
          caFile: '/etc/skein/ca.crt',
        },
      },
    );
  });

  it('refuses a missing controller, a controller without port, and a listen address off the pod', () => {
    assert.throws(() => parseAgentArgs([]), /--controller <host:port> is required/);
    assert.throws(() => parseAgentArgs(['--controller', 'skein-controller']), /expected <host>:<port>/);
    assert.throws(
      () => parseAgentArgs(['--controller', 'a:1', '--listen', '0.0.0.0:15020']),
      /not a loopback address/,
    );
    assert.equal(parseAgentArgs(['-h']), 'help');
  });
});
