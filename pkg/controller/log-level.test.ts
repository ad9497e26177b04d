import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { pino } from 'pino';
import { LogLevelFollower, logLevelFor } from './log-level.js';

test('the MeshConfig level wins while set; without one the startup level is back; a bad one changes nothing', () => {
  assert.equal(logLevelFor(undefined, 'info', 'debug'), 'info');
  assert.equal(logLevelFor('trace', 'info', 'info'), 'trace');
  assert.equal(logLevelFor('loud', 'info', 'debug'), 'debug');
});

test("the process logger and its children follow the MeshConfig's level", () => {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(JSON.parse(String(chunk)) as Record<string, unknown>);
      done();
    },
  });
  const root = pino({ level: 'warn' }, sink);
  const child = root.child({ component: 'push-planner' });
  const follower = new LogLevelFollower(root);
  const debugLines = () => lines.filter((l) => l['msg'] === 'push').length;
  child.debug('push');
  follower.follow('debug');
  child.debug('push');
  assert.equal(debugLines(), 1);
  assert.equal(root.level, 'debug');
  follower.follow('loud');
  assert.equal(root.level, 'debug', 'the last good level stays');
  assert.ok(lines.some((l) => l['value'] === 'loud' && l['level'] === 40));
  follower.follow(undefined);
  child.debug('push');
  assert.equal(root.level, 'warn', 'back to the startup level');
  assert.equal(debugLines(), 1);
  assert.equal(lines.filter((l) => l['msg'] === 'log level changed by the MeshConfig').length, 2);
});

test('--log-level pins the level: the MeshConfig is reported as overridden, once', () => {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(JSON.parse(String(chunk)) as Record<string, unknown>);
      done();
    },
  });
  const root = pino({ level: 'info' }, sink);
  const follower = new LogLevelFollower(root, true);
  follower.follow('error');
  follower.follow('error');
  assert.equal(root.level, 'info');
  assert.equal(lines.filter((l) => l['msg'] === 'MeshConfig log level overridden by --log-level').length, 1);
});
