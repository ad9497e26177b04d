// The mesh web view: the graph from /debug/events (Server-Sent Events), drawn
// with cytoscape and laid out by fcose; elements are updated in place so the
// layout stays put across updates.
import cytoscape from 'cytoscape';
import fcose from 'cytoscape-fcose';
import type { MeshGraph } from '../graph-types.js';
import { syncElements, toElements } from './elements.js';
import { renderHeader, renderLive } from './header.js';
import { renderPanel } from './panel.js';
import { renderProblems } from './problems.js';
import { graphStyle } from './style.js';

cytoscape.use(fcose);

interface FcoseOptions extends cytoscape.BaseLayoutOptions {
  name: 'fcose';
  quality?: 'draft' | 'default' | 'proof';
  randomize?: boolean;
  animate?: boolean;
  animationDuration?: number;
  fit?: boolean;
  padding?: number;
  nodeDimensionsIncludeLabels?: boolean;
  packComponents?: boolean;
  idealEdgeLength?: number;
  nodeRepulsion?: number;
  nestingFactor?: number;
  fixedNodeConstraint?: { nodeId: string; position: cytoscape.Position }[];
}

/** What the browser tests (and a curious operator's console) can inspect. */
export interface SkeinGraphHandle {
  cy: cytoscape.Core;
  graph: MeshGraph | undefined;
  /** Graph messages received. */
  updates: number;
  /** Layouts run (one initial, then one per change of shape). */
  layouts: number;
  selected: string | undefined;
  select(id: string | undefined): void;
}

declare global {
  interface Window {
    skeinGraph: SkeinGraphHandle;
  }
}

const container = document.getElementById('graph');
const panelEl = document.getElementById('panel');
if (container === null || panelEl === null) throw new Error('index.html is missing #graph or #panel');
const panel: HTMLElement = panelEl;
const problemsEl = document.getElementById('problems');
if (problemsEl === null) throw new Error('#problems missing from index.html');
const problems: HTMLElement = problemsEl;

const cy = cytoscape({ container, style: graphStyle, minZoom: 0.2, maxZoom: 3 });

const handle: SkeinGraphHandle = {
  cy,
  graph: undefined,
  updates: 0,
  layouts: 0,
  selected: undefined,
  select(id) {
    handle.selected = id;
    cy.elements().unselect();
    if (id !== undefined) cy.getElementById(id).select();
    if (handle.graph) renderPanel(panel, handle.graph, id);
  },
};
window.skeinGraph = handle;

cy.on('tap', (e) => {
  const target: unknown = e.target;
  // A tap on the background clears the selection.
  handle.select(target === cy ? undefined : e.target.id());
});

function layout(added: string[], first: boolean): void {
  const addedSet = new Set(added);
  // Existing leaves keep their place; only the new nodes are fitted in around them.
  const fixed: { nodeId: string; position: cytoscape.Position }[] = [];
  if (!first)
    cy.nodes(':childless').forEach((n) => {
      if (!addedSet.has(n.id())) fixed.push({ nodeId: n.id(), position: { ...n.position() } });
    });
  const opts: FcoseOptions = {
    name: 'fcose',
    quality: first ? 'default' : 'proof',
    randomize: first,
    animate: !first,
    animationDuration: 300,
    fit: first,
    padding: 40,
    // Off for updates: fcose would shift fixed nodes by their label's height.
    nodeDimensionsIncludeLabels: first,
    packComponents: false,
    idealEdgeLength: 110,
    nodeRepulsion: 9000,
    nestingFactor: 0.4,
    ...(fixed.length > 0 ? { fixedNodeConstraint: fixed } : {}),
  };
  handle.layouts++;
  cy.layout(opts).run();
}

function apply(g: MeshGraph): void {
  const first = handle.graph === undefined;
  handle.graph = g;
  handle.updates++;
  const added = syncElements(cy, toElements(g));
  if (first || added.length > 0) layout(added, first);
  renderHeader(g);
  renderProblems(problems, g);
  renderPanel(panel, g, handle.selected);
}

function isMeshGraph(v: unknown): v is MeshGraph {
  return typeof v === 'object' && v !== null && 'services' in v && 'edges' in v && 'counts' in v;
}

const events = new EventSource('/debug/events');
events.addEventListener('open', () => renderLive('on'));
events.addEventListener('error', () => renderLive('off'));
events.addEventListener('graph', (e) => {
  const data: unknown = JSON.parse(e.data);
  if (!isMeshGraph(data)) return;
  apply(data);
  renderLive('on', new Date());
});
