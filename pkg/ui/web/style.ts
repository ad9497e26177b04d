import type cytoscape from 'cytoscape';
import { ANY_ADDRESS } from '../graph-types.js';

// Colours match app.css (the legend): green synced, amber stale, red nacked, grey disconnected.
export const STATE_COLOURS = {
  SYNCED: '#2e9d4f',
  STALE: '#e6a100',
  NACKED: '#d93025',
  DISCONNECTED: '#9aa0a6',
} as const;

// Egress destinations orange, ingress sources teal (app.css --external, --ingress).
export const EXTERNAL = { fill: '#fff1e0', line: '#e07b00' } as const;
export const INGRESS = { fill: '#e0f2f1', line: '#00897b' } as const;

export const graphStyle: cytoscape.StylesheetJson = [
  {
    selector: 'node',
    style: { label: 'data(label)', 'font-size': 12, color: '#202124', 'text-wrap': 'wrap' },
  },
  {
    selector: 'node[kind = "namespace"]',
    style: {
      shape: 'round-rectangle',
      'background-color': '#eef1f4',
      'background-opacity': 0.6,
      'border-width': 1,
      'border-style': 'dashed',
      'border-color': '#9aa5b1',
      'text-valign': 'top',
      'text-halign': 'center',
      'font-size': 14,
      'font-weight': 'bold',
      color: '#455a64',
      padding: '18px',
    },
  },
  {
    selector: 'node[kind = "service"], node[kind = "identity"]',
    style: {
      shape: 'round-rectangle',
      'background-color': '#e8f0fe',
      'border-width': 2,
      'border-color': '#4a6fa5',
      'text-valign': 'center',
      'text-halign': 'center',
      width: 120,
      height: 30,
      'text-max-width': '110px',
      padding: '6px',
      'font-weight': 'bold',
    },
  },
  {
    selector: 'node[kind = "identity"]',
    style: { 'background-color': '#f3e8fd', 'border-color': '#8e5cc4', 'border-style': 'dashed' },
  },
  {
    // With proxies inside, the name sits on top of the box.
    selector: 'node[kind = "service"]:parent, node[kind = "identity"]:parent',
    style: { 'text-valign': 'top', padding: '10px' },
  },
  {
    selector: 'node[kind = "proxy"]',
    style: {
      shape: 'ellipse',
      width: 18,
      height: 18,
      'font-size': 10,
      color: '#3c4043',
      'text-valign': 'bottom',
      'text-margin-y': 3,
      'border-width': 1,
      'border-color': '#ffffff',
    },
  },
  ...(Object.entries(STATE_COLOURS).map(([state, colour]) => ({
    selector: `node[kind = "proxy"][state = "${state}"]`,
    style: { 'background-color': colour },
  })) satisfies cytoscape.StylesheetStyle[]),
  {
    selector: 'edge',
    style: {
      width: 2,
      'curve-style': 'bezier',
      'target-arrow-shape': 'triangle',
      label: 'data(label)',
      'font-size': 10,
      'text-rotation': 'autorotate',
      'text-background-color': '#fafafa',
      'text-background-opacity': 0.9,
      'text-background-padding': '2px',
    },
  },
  {
    selector: 'edge[edgeKind = "allow"]',
    style: { 'line-color': '#37474f', 'target-arrow-color': '#37474f', color: '#263238' },
  },
  {
    // Calls the sidecars reported where no policy edge is drawn (permissive mode).
    selector: 'edge[edgeKind = "traffic"]',
    style: {
      'line-color': '#0277bd',
      'target-arrow-color': '#0277bd',
      'line-style': 'dotted',
      color: '#01579b',
    },
  },
  { selector: 'edge[health = "good"]', style: { width: 3 } },
  { selector: 'edge[health = "degraded"]', style: { width: 3, color: '#b26a00' } },
  { selector: 'edge[health = "bad"]', style: { width: 3, color: '#c62828', 'font-weight': 'bold' } },
  {
    selector: 'edge[edgeKind = "split"]',
    style: {
      'line-color': '#7b3fbf',
      'target-arrow-color': '#7b3fbf',
      'line-style': 'dashed',
      color: '#5b2a91',
      'font-weight': 'bold',
    },
  },
  {
    selector: 'node[kind = "zone"]',
    style: {
      shape: 'round-rectangle',
      'background-color': '#fbf7ef',
      'background-opacity': 0.5,
      'border-width': 1,
      'border-style': 'dotted',
      'border-color': '#b0a48a',
      'text-valign': 'top',
      'text-halign': 'center',
      'font-size': 13,
      'font-style': 'italic',
      color: '#6d5f45',
      padding: '16px',
    },
  },
  {
    // A destination outside the mesh (Egress): an orange hexagon.
    selector: 'node[kind = "external"]',
    style: {
      shape: 'round-hexagon',
      'background-color': EXTERNAL.fill,
      'border-width': 2,
      'border-color': EXTERNAL.line,
      'text-valign': 'center',
      'text-halign': 'center',
      width: 150,
      height: 34,
      'text-max-width': '140px',
      'font-size': 11,
    },
  },
  {
    selector: `node[kind = "external"][externalKind = "${ANY_ADDRESS}"]`,
    style: { 'border-style': 'dashed', 'font-style': 'italic' },
  },
  {
    // A source outside the mesh (IngressBackend): a teal tag.
    selector: 'node[kind = "ingress-source"]',
    style: {
      shape: 'round-tag',
      'background-color': INGRESS.fill,
      'border-width': 2,
      'border-color': INGRESS.line,
      'text-valign': 'center',
      'text-halign': 'center',
      width: 140,
      height: 30,
      'text-max-width': '130px',
      'font-size': 11,
    },
  },
  {
    selector: 'edge[edgeKind = "egress"]',
    style: { 'line-color': EXTERNAL.line, 'target-arrow-color': EXTERNAL.line, color: '#8a3c00' },
  },
  {
    selector: 'edge[edgeKind = "ingress"]',
    style: {
      'line-color': INGRESS.line,
      'target-arrow-color': INGRESS.line,
      'source-arrow-shape': 'square',
      'source-arrow-color': INGRESS.line,
      color: '#004d40',
    },
  },
  {
    // Its Egress, IngressBackend or Ingress has a problem in force (listed in the problems panel).
    selector: 'edge[problem = "yes"]',
    style: {
      'line-style': 'dotted',
      'line-color': STATE_COLOURS.NACKED,
      'target-arrow-color': STATE_COLOURS.NACKED,
    },
  },
  {
    selector: ':selected',
    style: { 'overlay-color': '#1a73e8', 'overlay-opacity': 0.18, 'overlay-padding': 4 },
  },
];
