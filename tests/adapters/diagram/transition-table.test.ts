import { describe, expect, it } from "vitest";
import { not, setup, type AnyStateMachine } from "xstate";
import { namedReferences, renderTransitionTable, transitionRows } from "../../../adapters/diagram/transition-table.ts";
import { machineCatalog } from "../../../machines/catalog.ts";
import { listTransitions } from "../../../machines/graph.ts";

const sample = setup({
  guards: { ok: () => true, no: () => false, over: (_, _params: { limit: number }) => true },
  actions: {
    note: () => {},
    tally: (_, _params: { attempt: number; why: string }) => {},
    arm: () => {},
    disarm: () => {},
  },
  delays: { soon: 5 },
}).createMachine({
  id: "m",
  initial: "a",
  on: { RESET: { target: ".a" } },
  states: {
    a: {
      entry: ["arm"],
      exit: ["disarm"],
      after: { 100: { target: "b" }, soon: { target: "c" } },
      on: {
        GO: [
          {
            guard: "ok",
            target: "b.inner.y",
            actions: ["note", { type: "tally", params: { attempt: 1, why: "a|b" } }],
          },
          { guard: not("no"), target: "b.h" },
          { guard: { type: "over", params: { limit: 2 } }, actions: [() => {}] },
          { guard: () => true, target: "c" },
          { actions: ["note"] },
        ],
        PING: { actions: ["note"] },
      },
    },
    b: {
      initial: "inner",
      on: { BACK: { target: "a" } },
      states: {
        inner: { initial: "x", states: { x: { always: [{ guard: "ok", target: "y" }, { target: "#m.c" }] }, y: {} } },
        h: { type: "history", history: "deep" },
      },
    },
    c: { type: "final" },
  },
});

/** Transitions counted from the machine's configuration, without the state nodes the table reads. */
function configuredTransitions(config: Record<string, unknown>): number {
  const count = (value: unknown) => (value === undefined ? 0 : Array.isArray(value) ? value.length : 1);
  const perEvent = (map: unknown) =>
    map && typeof map === "object" ? Object.values(map).reduce<number>((n, v) => n + count(v), 0) : 0;
  const invokes = [config.invoke ?? []].flat() as Array<Record<string, unknown>>;
  const states = (config.states ?? {}) as Record<string, Record<string, unknown>>;
  return (
    perEvent(config.on) +
    count(config.always) +
    perEvent(config.after) +
    count(config.onDone) +
    invokes.reduce((n, i) => n + count(i.onDone) + count(i.onError) + count(i.onSnapshot), 0) +
    Object.values(states).reduce((n, s) => n + configuredTransitions(s), 0)
  );
}

const bodyRows = (table: string) => {
  const lines = table.split("\n");
  const end = lines.indexOf("");
  return lines.slice(2, end);
};

describe("transition tables", () => {
  it("renders guards, fallback, always, after, history, params, inline, targetless, nesting and entry/exit", () => {
    expect(renderTransitionTable(sample)).toBe(
      [
        "| From | Event | Guard | To | Actions |",
        "| --- | --- | --- | --- | --- |",
        "| (root) | `RESET` | — | `a` | — |",
        '| `a` | `GO` | `ok` | `b.inner.y` | `note`, `tally(attempt: 1, why: "a\\|b")` |',
        "| `a` | `GO` | `not(no)` | `b.h` | — |",
        "| `a` | `GO` | `over(limit: 2)` | unchanged | (inline) |",
        "| `a` | `GO` | (inline) | `c` | — |",
        "| `a` | `GO` | otherwise | unchanged | `note` |",
        "| `a` | `PING` | — | unchanged | `note` |",
        "| `a` | after 100 ms | — | `b` | — |",
        "| `a` | after soon | — | `c` | — |",
        "| `b` | `BACK` | — | `a` | — |",
        "| `b.inner.x` | always | `ok` | `b.inner.y` | — |",
        "| `b.inner.x` | always | otherwise | `c` | — |",
        "",
        "| State | Entry | Exit |",
        "| --- | --- | --- |",
        "| `a` | `arm` | `disarm` |",
        "",
      ].join("\n"),
    );
  });

  it("says so when no state has entry or exit actions", () => {
    const m = setup({}).createMachine({ id: "n", initial: "a", states: { a: { on: { GO: { target: "b" } } }, b: {} } });
    expect(renderTransitionTable(m)).toBe(
      [
        "| From | Event | Guard | To | Actions |",
        "| --- | --- | --- | --- | --- |",
        "| `a` | `GO` | — | `b` | — |",
        "",
        "No state has entry or exit actions.",
        "",
      ].join("\n"),
    );
  });

  it("names every named action and guard once, inline ones not at all", () => {
    expect(namedReferences(sample)).toEqual({
      actions: ["note", "tally", "arm", "disarm"],
      guards: ["ok", "no", "over"],
    });
  });

  it("the independent count agrees with the sample's rows (so it can tell a missing row)", () => {
    expect(configuredTransitions(sample.config as Record<string, unknown>)).toBe(12);
    expect(bodyRows(renderTransitionTable(sample))).toHaveLength(12);
  });

  for (const { name, machine } of machineCatalog) {
    it(`${name}: every transition of the machine is one table row`, () => {
      const rows = bodyRows(renderTransitionTable(machine));
      expect(rows.length).toBe(configuredTransitions((machine as AnyStateMachine).config as Record<string, unknown>));
      expect(rows.length).toBe(listTransitions(machine).length);
      const byRow = transitionRows(machine).map((r) => `${r.event.text} → ${r.to.map((t) => t.text).join(",")}`);
      const byGraph = listTransitions(machine).map((t) => {
        const to = t.targets.map((id) => id.slice(machine.id.length + 1));
        return `${t.event} → ${to.join(",")}`;
      });
      expect(byRow).toEqual(byGraph);
    });
  }
});
