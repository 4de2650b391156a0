// Mermaid stateDiagram-v2 generated from a machine's state nodes. Unlike toDirectedGraph, it
// includes guards, actions, `always` transitions and targetless (self) transitions.
import type { AnyStateMachine } from "xstate";
import { listTransitions } from "../../machines/graph.ts";

interface NodeLike {
  id: string;
  key: string;
  type: string;
  initial?: { target: ReadonlyArray<{ id: string }> } | undefined;
  states: Record<string, NodeLike>;
}

const mid = (id: string) => id.replace(/[^A-Za-z0-9]/g, "_");
const ANY = "any_state";

/** Deterministic Mermaid text for a machine. */
export function renderMermaid(machine: AnyStateMachine): string {
  const lines: string[] = ["stateDiagram-v2"];
  const root = machine.root as unknown as NodeLike;
  const emitNode = (node: NodeLike, indent: string) => {
    const children = Object.values(node.states);
    if (node.initial && node.initial.target[0]) lines.push(`${indent}[*] --> ${mid(node.initial.target[0].id)}`);
    for (const child of children) {
      const id = mid(child.id);
      if (Object.keys(child.states).length > 0) {
        lines.push(`${indent}state "${child.key}" as ${id} {`);
        emitNode(child, indent + "  ");
        lines.push(`${indent}}`);
      } else {
        lines.push(`${indent}state "${child.key}" as ${id}`);
        if (child.type === "final") lines.push(`${indent}${id} --> [*]`);
      }
    }
  };
  emitNode(root, "  ");
  const transitions = listTransitions(machine);
  if (transitions.some((t) => t.source === machine.root.id)) lines.push(`  state "(any state)" as ${ANY}`);
  for (const t of transitions) {
    const from = t.source === machine.root.id ? ANY : mid(t.source);
    const to = t.targets.length ? mid(t.targets[0]!) : from;
    let label = t.event;
    if (t.guard) label += ` [${t.guard}]`;
    if (t.actions.length) label += ` / ${t.actions.join(", ")}`;
    lines.push(`  ${from} --> ${to} : ${label}`);
  }
  return lines.join("\n") + "\n";
}
