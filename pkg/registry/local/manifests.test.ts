import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseManifests } from './manifests.js';

describe('parseManifests', () => {
  it('reads multi-document YAML, skipping empty documents and defaulting the namespace', () => {
    const parsed = parseManifests(
      'a.yaml',
      [
        '# leading comment',
        'apiVersion: v1',
        'kind: ServiceAccount',
        'metadata: {name: one}',
        '---',
        '---',
        'apiVersion: v1',
        'kind: Namespace',
        'metadata: {name: shop}',
        '---',
        '',
      ].join('\n'),
    );
    assert.deepEqual(parsed.problems, []);
    assert.deepEqual(
      parsed.objects.map((o) => [o.kind, o.metadata.namespace, o.metadata.name]),
      [
        ['ServiceAccount', 'default', 'one'],
        ['Namespace', undefined, 'shop'],
      ],
    );
  });

  it('reports invalid documents with kind, name and document number, keeping the rest', () => {
    const parsed = parseManifests(
      'b.yaml',
      [
        'apiVersion: v1',
        'kind: ServiceAccount',
        'metadata: {name: good, namespace: shop}',
        '---',
        'apiVersion: split.smi-spec.io/v1alpha2',
        'kind: TrafficSplit',
        'metadata: {name: bad, namespace: shop}',
        'spec: {service: a, backends: [{service: b, weight: "heavy"}]}',
        '---',
        'kind: Gizmo',
        'apiVersion: v9',
        'metadata: {name: g}',
      ].join('\n'),
    );
    assert.deepEqual(
      parsed.objects.map((o) => o.metadata.name),
      ['good'],
    );
    assert.deepEqual(parsed.problems[0], {
      source: 'b.yaml',
      kind: 'TrafficSplit',
      namespace: 'shop',
      name: 'bad',
      reason: 'document 2: spec.backends[0].weight: must be integer',
    });
    const gizmo = parsed.problems[1];
    assert.deepEqual([gizmo?.kind, gizmo?.name, gizmo?.namespace], ['Gizmo', 'g', undefined]);
    assert.match(
      gizmo?.reason ?? '',
      /^document 3: unknown kind "Gizmo" \(skein reads: Namespace, .*TrafficSplit/,
    );
    assert.equal(parsed.problems.length, 2);
  });

  it('reports YAML syntax errors with the parser message; other documents still load', () => {
    const parsed = parseManifests(
      'c.yaml',
      ['apiVersion: v1', 'kind: Namespace', 'metadata: {name: x}', '---', 'a: [1, 2', '---', 'k: v: w'].join(
        '\n',
      ),
    );
    assert.equal(parsed.objects.length, 1);
    assert.equal(parsed.problems.length, 2);
    assert.match(parsed.problems[0]?.reason ?? '', /^document 2: invalid YAML: .*line/);
    assert.match(parsed.problems[1]?.reason ?? '', /^document 3: invalid YAML: /);
  });

  it('reads JSON files and List kinds', () => {
    const parsed = parseManifests(
      'd.json',
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'List',
        items: [
          { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'a', namespace: 'n' } },
          { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'b', namespace: 'n' } },
        ],
      }),
    );
    assert.deepEqual(
      parsed.objects.map((o) => o.metadata.name),
      ['a', 'b'],
    );
    assert.match(parseManifests('e.json', '{"a":').problems[0]?.reason ?? '', /^invalid JSON: /);
  });

  it('reads JSON documents in a .yaml file as the YAML parser does, problems and document numbers included', () => {
    const docs = [
      {
        apiVersion: 'v1',
        kind: 'ServiceAccount',
        metadata: { name: 'one', labels: { a: 'x # not a comment' } },
      },
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop' } },
      { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'bad', namespace: 'shop' }, spec: 7 },
    ];
    const json = `---\n${docs.map((d) => JSON.stringify(d, null, 1)).join('\n---\n')}\n---\n`;
    // The same documents in block style, which only the YAML parser reads.
    const yaml = `${docs.map((d) => `# doc\n${JSON.stringify(d)}`).join('\n---\n')}\n---\n`;
    const fast = parseManifests('j.yaml', json);
    const slow = parseManifests('j.yaml', yaml);
    assert.deepEqual(fast, slow);
    assert.deepEqual(
      fast.objects.map((o) => [o.kind, o.metadata.namespace, o.metadata.name, o.metadata.labels]),
      [
        ['ServiceAccount', 'default', 'one', { a: 'x # not a comment' }],
        ['Namespace', undefined, 'shop', undefined],
      ],
    );
    assert.equal(fast.problems.length, 1);
    assert.match(fast.problems[0]?.reason ?? '', /^document 3: /);
    // One YAML document among JSON ones: the whole file goes through the YAML parser.
    const mixed = parseManifests(
      'm.yaml',
      `${JSON.stringify(docs[0])}\n---\nkind: Namespace\napiVersion: v1\nmetadata: {name: shop}\n`,
    );
    assert.deepEqual(
      mixed.objects.map((o) => o.metadata.name),
      ['one', 'shop'],
    );
  });
});
