import type { Network } from '../domain/registry/registry';

/** At most this many persons and this many plates are drawn; the counts above the picture are never cut. */
export const GRAPH_NODES_PER_SIDE = 20;

type Node = { key: string; label: string; x: number; y: number; own: boolean };

export type NetworkGraph = {
  width: number;
  height: number;
  persons: Node[];
  plates: Node[];
  /** The claims drawn: each joins a person and a plate that are both drawn. */
  edges: { claimLabel: string; person: string; plate: string; x1: number; y1: number; x2: number; y2: number; own: boolean }[];
  /** Claims of the answer not drawn (their person or plate is beyond the nodes drawn, or beyond the answer's edges). */
  notDrawn: number;
};

/**
 * Geometry of a network as a two-column graph, computed here so that the template only draws:
 * persons on the left, plates on the right, one line per claim between its person and its plate.
 * Persons are anonymous ("Person 2"): an edge carries ids, never a name; plates are shown as a
 * plate search shows them. Nodes are numbered in the order of the edges (the claim itself first,
 * then the newest claims). The viewBox is narrow, so that it scales down to a phone's width with
 * its text still readable.
 */
export function networkGraph(net: Network, ownClaimId: string): NetworkGraph {
  const personIds: string[] = [];
  const plateIds: string[] = [];
  const seenPerson = new Set<string>();
  const seenPlate = new Set<string>();
  for (const e of net.edges) {
    if (!seenPerson.has(e.client_id)) {
      seenPerson.add(e.client_id);
      personIds.push(e.client_id);
    }
    if (!seenPlate.has(e.vehicle_registration)) {
      seenPlate.add(e.vehicle_registration);
      plateIds.push(e.vehicle_registration);
    }
  }
  const own = net.edges.find((e) => e.claim_id === ownClaimId);
  const shownPersons = personIds.slice(0, GRAPH_NODES_PER_SIDE);
  const shownPlates = plateIds.slice(0, GRAPH_NODES_PER_SIDE);
  const rows = Math.max(shownPersons.length, shownPlates.length, 1);
  const rowHeight = 34;
  const top = 28;
  const width = 360;
  const height = top + rows * rowHeight;
  const xPerson = 100;
  const xPlate = 290;
  const y = (i: number, n: number) => Math.round(top + (rows - n) * (rowHeight / 2) + i * rowHeight + rowHeight / 2);
  const persons: Node[] = shownPersons.map((id, i) => ({
    key: id,
    label: id === own?.client_id ? 'This person' : `Person ${i + 1}`,
    x: xPerson,
    y: y(i, shownPersons.length),
    own: id === own?.client_id,
  }));
  const plates: Node[] = shownPlates.map((p, i) => ({
    key: p,
    label: p,
    x: xPlate,
    y: y(i, shownPlates.length),
    own: p === own?.vehicle_registration,
  }));
  const personAt = new Map(persons.map((n) => [n.key, n]));
  const plateAt = new Map(plates.map((n) => [n.key, n]));
  const edges: NetworkGraph['edges'] = [];
  let n = 0;
  for (const e of net.edges) {
    const p = personAt.get(e.client_id);
    const v = plateAt.get(e.vehicle_registration);
    if (!p || !v) continue;
    const isOwn = e.claim_id === ownClaimId;
    if (!isOwn) n++;
    edges.push({
      claimLabel: isOwn ? 'This claim' : `Claim ${n}`,
      person: p.label,
      plate: v.label,
      x1: p.x + 10,
      y1: p.y,
      x2: v.x - 34,
      y2: v.y,
      own: isOwn,
    });
  }
  return { width, height, persons, plates, edges, notDrawn: net.claims - edges.length };
}
