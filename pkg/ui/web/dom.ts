type Child = Node | string | undefined | false;

/** Builds an element; text goes in as text nodes, so names from the mesh can never inject markup. */
export function h(tag: string, attrs: Record<string, string> = {}, ...children: Child[]): HTMLElement {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  for (const c of children) {
    if (c === undefined || c === false) continue;
    el.append(typeof c === 'string' ? document.createTextNode(c) : c);
  }
  return el;
}

export function table(head: string[], rows: Child[][]): HTMLElement {
  return h(
    'table',
    {},
    h('tr', {}, ...head.map((c) => h('th', {}, c))),
    ...rows.map((r) => h('tr', {}, ...r.map((c) => h('td', {}, c)))),
  );
}
