// The docs' States list comes from the states' own descriptions, nested as the state tree is, and
// a state without a description is a named error rather than a silent gap.
import { describe, expect, it } from "vitest";
import { createMachine } from "xstate";
import { MissingDescriptionError, renderStateList } from "../../../adapters/diagram/state-list.ts";
import { machineCatalog } from "../../../machines/catalog.ts";

describe("renderStateList", () => {
  it("lists every state in document order, nested, with its kind where it matters", () => {
    const machine = createMachine({
      id: "m",
      initial: "a",
      states: {
        a: { description: "First.", initial: "x", states: { x: { description: "Inner." } } },
        h: { type: "history", description: "Back." },
        z: { type: "final", description: "Done." },
      },
    });
    expect(renderStateList(machine)).toBe(
      "**States** (from each state's `description`):\n\n" +
        "- `a`: First.\n  - `a.x`: Inner.\n- `h` (history): Back.\n- `z` (final): Done.\n",
    );
  });

  it("names a state that has no description", () => {
    const machine = createMachine({ id: "m", initial: "a", states: { a: {} } });
    expect(() => renderStateList(machine)).toThrow(MissingDescriptionError);
    expect(() => renderStateList(machine)).toThrow(/m: state a has no description/);
  });

  it("every catalogued machine describes every state", () => {
    for (const { machine } of machineCatalog) expect(() => renderStateList(machine)).not.toThrow();
  });
});
