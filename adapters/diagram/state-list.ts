// The "States" list of each machine's section in docs/state-machines.md, generated from the states'
// own `description` fields, so what a state is said to be cannot drift from the machine. Pure.
import type { AnyStateMachine } from "xstate";
import { stateNodesInOrder } from "../../machines/graph.ts";

export class MissingDescriptionError extends Error {
  constructor(machine: string, path: string) {
    super(`${machine}: state ${path} has no description; give it one (the docs' States list is made from them)`);
    this.name = "MissingDescriptionError";
  }
}

/**
 * One Markdown list item per state below the root, in document order: its dotted path, what kind
 * of state it is when that matters (final, history, parallel), and its description.
 */
export function renderStateList(machine: AnyStateMachine): string {
  const lines = ["**States** (from each state's `description`):", ""];
  for (const node of stateNodesInOrder(machine).slice(1)) {
    const path = node.path.join(".");
    if (!node.description) throw new MissingDescriptionError(machine.id, path);
    const kind = node.type === "final" || node.type === "history" || node.type === "parallel" ? ` (${node.type})` : "";
    const depth = "  ".repeat(node.path.length - 1);
    lines.push(`${depth}- \`${path}\`${kind}: ${node.description}`);
  }
  return lines.join("\n") + "\n";
}
