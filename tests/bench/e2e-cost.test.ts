import { describe, expect, it } from "vitest";
import { requestOf, type Element } from "../../bench/cost-model.ts";
import { costFigures, costTargets, costText } from "../../bench/e2e-cost.ts";

const el = (text: string, tokens: number, role = "user", blocks = 1): Element => ({ text, tokens, role, blocks });
const round3 = (x: number) => Math.round(x * 1000) / 1000;

describe("cost figures", () => {
  it("figures: ratio, break-even, steady state, miss amplification and fixed overhead", () => {
    const T2 = el("sf tools", 300, "tools", 2);
    const S2 = el("system", 100, "system");
    const N = el("tools", 100, "tools", 2);
    const u = (r: number) => el(`${r}: a prompt`, 1000); // differing at the first character
    const native = [1, 2, 3, 4].map((r) => [requestOf([N, S2, ...[1, 2, 3, 4].slice(0, r).map(u)])]);
    const stateFlow = [1, 2, 3, 4].map((r) => [requestOf([T2, S2, u(r)])]);
    const f = costFigures({ workload: "bench", sizeKiB: 8, native, stateFlow }, "bench");
    // Native 1,200, 1,120, 1,220, 1,320; State Flow 1,400, then 1,000 + 0.1 × 400.
    // Cumulative: native 1,200, 2,320, 3,540, 4,860; State Flow 1,400, 2,440, 3,480, 4,520.
    expect(f.breakEven).toBe(3);
    expect(f.ratio).toEqual({});
    expect(f.perRun).toEqual({ stateFlow: 1040, native: 1270, compacting: 1270 });
    expect(f.steadyVsCompacting).toBe(round3(1040 / 1270));
    expect(f.missAmplification).toBe(1);
    expect(f.fixedOverhead).toBe(200);
    const targets = costTargets([{ ...f, model: "anthropic" }]);
    expect(targets.map((t) => [t.value, t.pass])).toEqual([
      [3, true],
      [0.819, false],
      [1, true],
      [200, true],
    ]);
    expect(costTargets([{ ...f, model: "anthropic", breakEven: null }])[0]!.pass).toBe(false);
    expect(costText([f])).toMatch(/bench\s+8 KiB\s+bench\s+4\s+-\s+-\s+-\s+3\s+1040 \/ 1270/);
  });
});
