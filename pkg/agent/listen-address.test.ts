import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { grpcAddress, parseListenAddress } from './listen-address.js';

describe('parseListenAddress', () => {
  it("takes a Unix socket path in either of gRPC's spellings", () => {
    assert.deepEqual(parseListenAddress('unix:/var/run/skein/ads.sock'), { unix: '/var/run/skein/ads.sock' });
    assert.deepEqual(parseListenAddress('unix:///var/run/skein/ads.sock'), {
      unix: '/var/run/skein/ads.sock',
    });
    assert.throws(() => parseListenAddress('unix:ads.sock'), /must be absolute/);
  });

  it('takes loopback addresses only', () => {
    assert.deepEqual(parseListenAddress('127.0.0.1:15020'), { host: '127.0.0.1', port: 15020 });
    assert.deepEqual(parseListenAddress('[::1]:0'), { host: '::1', port: 0 });
    assert.equal(grpcAddress(parseListenAddress('[::1]:7')), '[::1]:7');
    for (const bad of ['0.0.0.0:15020', '10.0.0.7:15020', '[::]:1'])
      assert.throws(() => parseListenAddress(bad), /not a loopback address/);
    assert.throws(() => parseListenAddress('127.0.0.1'), /expected unix/);
    assert.throws(() => parseListenAddress('127.0.0.1:70000'), /expected unix/);
  });
});
