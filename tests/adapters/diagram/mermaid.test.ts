import { describe, expect, it } from "vitest";
import { setup } from "xstate";
import { renderMermaid } from "../../../adapters/diagram/mermaid.ts";
import { machineCatalog } from "../../../machines/catalog.ts";
import { listTransitions } from "../../../machines/graph.ts";

describe("Mermaid generation", () => {
  it("draws guards, actions, always and self transitions", () => {
    const m = setup({ guards: { ok: () => true }, actions: { note: () => {} } }).createMachine({
      id: "m",
      initial: "a",
      states: {
        a: { on: { GO: [{ guard: "ok", target: "b", actions: ["note"] }], PING: { actions: ["note"] } } },
        b: { always: { target: "c" } },
        c: { type: "final" },
      },
    });
    expect(renderMermaid(m)).toBe(
      [
        "stateDiagram-v2",
        "  [*] --> m_a",
        '  state "a" as m_a',
        '  state "b" as m_b',
        '  state "c" as m_c',
        "  m_c --> [*]",
        "  m_a --> m_b : GO [ok] / note",
        "  m_a --> m_a : PING / note",
        "  m_b --> m_c : always",
        "",
      ].join("\n"),
    );
  });

  for (const { name, machine } of machineCatalog) {
    it(`${name}: every transition appears as one diagram edge`, () => {
      const edges = renderMermaid(machine)
        .split("\n")
        .filter((l) => / --> .* : /.test(l));
      expect(edges.length).toBe(listTransitions(machine).length);
    });
  }
});
