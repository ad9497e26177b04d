import assert from 'node:assert/strict';
import { test } from 'node:test';
import { namespaceTable } from './commands/namespace.js';
import { formatTable } from './table.js';

test('columns are padded to the widest cell, two spaces apart, no trailing spaces', () => {
  assert.equal(
    formatTable(
      ['A', 'LONGER'],
      [
        ['xxxx', 'y'],
        ['z', ''],
      ],
    ),
    'A     LONGER\nxxxx  y\nz\n',
  );
});

test('namespace list: sorted by name, injection state spelled out when unset', () => {
  assert.equal(
    namespaceTable([
      { name: 'shop', mesh: 'skein', injection: 'enabled' },
      { name: 'legacy', mesh: 'skein', injection: undefined },
    ]),
    'NAMESPACE  MESH   SIDECAR-INJECTION\nlegacy     skein  not set (off)\nshop       skein  enabled\n',
  );
});
