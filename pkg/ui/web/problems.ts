// The problems panel: every invalid object and policy problem in force, so a
// typo shows where people look and not only in the log (`/debug/problems`).
import type { GraphProblem, MeshGraph } from '../graph-types.js';
import { h } from './dom.js';

function objectOf(p: GraphProblem): string {
  const name = p.name === undefined ? '' : ` ${p.namespace ? `${p.namespace}/` : ''}${p.name}`;
  return `${p.kind ?? 'document'}${name}`;
}

export function renderProblems(el: HTMLElement, g: MeshGraph): void {
  el.hidden = g.problems.length === 0;
  const title = `${g.problems.length} problem${g.problems.length === 1 ? '' : 's'}`;
  el.replaceChildren(
    h('div', { class: 'problems-title' }, title),
    h(
      'ul',
      {},
      ...g.problems.map((p) =>
        h(
          'li',
          { class: `problem ${p.type}`, title: `since ${p.since} · ${p.source}` },
          h('b', {}, objectOf(p)),
          `: ${p.reason}`,
          h('div', { class: 'sub' }, `in force: ${p.inForce}`),
        ),
      ),
    ),
  );
}
