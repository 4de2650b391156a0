// The cost-model part of `npm run bench`: the requests the bench captured, per workload and state
// size, priced under each price model of bench/cost-model.ts, State Flow against native Pi (as it
// is, and with compaction). Pure functions of the priced runs, so the figures and targets can be
// checked on hand-made sessions.

import { compactNative, newTokens, priceRuns, PRICE_MODELS, type PriceModel, type Run } from "./cost-model.ts";
import type { CostCase, Workload } from "./e2e-fixture.ts";
import { check, table, type Target } from "./e2e-report.ts";
import { round, sum } from "./e2e-stats.ts";

export { COST_SIZES, type CostCase } from "./e2e-fixture.ts";

export const RATIO_RUNS = [10, 20, 100] as const;

export interface CostFigures {
  readonly workload: Workload;
  readonly sizeKiB: number;
  readonly model: PriceModel;
  readonly runs: number;
  /** Cumulative cost State Flow ÷ native (as it is) after n runs, for n in RATIO_RUNS up to `runs`. */
  readonly ratio: Record<number, number>;
  /** The first run from which State Flow's cumulative cost stays at or below native's; null if it never does. */
  readonly breakEven: number | null;
  /** Mean cost per run over the last half: State Flow ÷ native with compaction. */
  readonly steadyVsCompacting: number;
  /** Mean cost per run over the last half, in uncached-token units. */
  readonly perRun: { readonly stateFlow: number; readonly native: number; readonly compacting: number };
  /** Uncached input tokens (written or plain) ÷ the tokens the run adds to the conversation, last half. */
  readonly missAmplification: number;
  readonly nativeMissAmplification: number;
  /** Tools + system prompt tokens of State Flow's first request − native's. */
  readonly fixedOverhead: number;
  /** Native's compactions over the runs (128k-token threshold). */
  readonly compactions: number;
}

const cumulative = (xs: readonly number[]) => {
  let acc = 0;
  return xs.map((x) => (acc += x));
};

/** Tools + system prompt tokens of a session's first request. */
const fixedTokens = (runs: readonly Run[]) => {
  const first = runs[0]?.[0];
  return first ? first.elements[0]!.tokens + first.elements[1]!.tokens : NaN;
};

export function costFigures(c: CostCase, model: PriceModel): CostFigures {
  const n = Math.min(c.native.length, c.stateFlow.length);
  const native = c.native.slice(0, n);
  const stateFlow = c.stateFlow.slice(0, n);
  const compacted = compactNative(native);
  const nativeCost = priceRuns(native, model);
  const sfCost = priceRuns(stateFlow, model);
  const compactingCost = priceRuns(compacted.runs, model);
  const cumNative = cumulative(nativeCost.map((r) => r.cost));
  const cumSf = cumulative(sfCost.map((r) => r.cost));
  const ratio: Record<number, number> = {};
  for (const k of RATIO_RUNS) if (k <= n) ratio[k] = round(cumSf[k - 1]! / cumNative[k - 1]!, 3);
  let breakEven: number | null = null;
  for (let i = n - 1; i >= 0 && cumSf[i]! <= cumNative[i]!; i--) breakEven = i + 1;
  const half = Math.floor(n / 2);
  const lastHalf = <T>(xs: readonly T[]) => xs.slice(half);
  const meanCost = (xs: readonly { cost: number }[]) => sum(lastHalf(xs).map((r) => r.cost)) / (n - half);
  const fresh = sum(lastHalf(newTokens(native)));
  const perRun = { stateFlow: meanCost(sfCost), native: meanCost(nativeCost), compacting: meanCost(compactingCost) };
  return {
    workload: c.workload,
    sizeKiB: c.sizeKiB,
    model,
    runs: n,
    ratio,
    breakEven,
    steadyVsCompacting: round(perRun.stateFlow / perRun.compacting, 3),
    perRun: {
      stateFlow: round(perRun.stateFlow, 0),
      native: round(perRun.native, 0),
      compacting: round(perRun.compacting, 0),
    },
    missAmplification: round(sum(lastHalf(sfCost).map((r) => r.uncached)) / fresh, 2),
    nativeMissAmplification: round(sum(lastHalf(nativeCost).map((r) => r.uncached)) / fresh, 2),
    fixedOverhead: fixedTokens(stateFlow) - fixedTokens(native),
    compactions: compacted.compactions,
  };
}

export const allCostFigures = (cases: readonly CostCase[]) =>
  cases.flatMap((c) => PRICE_MODELS.map((model) => costFigures(c, model)));

/** The cost targets (issue 27); a missing figure (its workload or size did not run) leaves its target out. */
export function costTargets(figures: readonly CostFigures[]): Target[] {
  const find = (workload: Workload, sizeKiB: number, model: PriceModel) =>
    figures.find((f) => f.workload === workload && f.sizeKiB === sizeKiB && f.model === model);
  const targets: Target[] = [];
  const bench = find("bench", 8, "anthropic");
  if (bench) {
    // A break-even not reached within the runs is infinite: the target fails.
    targets.push(check("cost anthropic, bench 8 KiB: break-even run", bench.breakEven ?? Infinity, 30));
    targets.push(
      check("cost anthropic, bench 8 KiB: steady state / compacting native", bench.steadyVsCompacting, 0.25),
    );
    targets.push(check("cost anthropic, bench 8 KiB: miss amplification", bench.missAmplification, 3.5));
    targets.push(check("cost: fixed overhead (tools + system prompt − native's), tokens", bench.fixedOverhead, 800));
  }
  const qa = find("qa", 0.5, "anthropic");
  const at20 = qa?.ratio[20];
  if (at20 !== undefined)
    targets.push(check("cost anthropic, qa tiny state: cumulative / native at 20 runs", at20, 1.5));
  return targets;
}

const show = (x: number | undefined | null) => (x === undefined || x === null || Number.isNaN(x) ? "-" : `${x}`);

export function costText(figures: readonly CostFigures[]): string {
  const rows = figures.map((f) => [
    f.workload,
    `${f.sizeKiB} KiB`,
    f.model,
    `${f.runs}`,
    ...RATIO_RUNS.map((k) => show(f.ratio[k])),
    f.breakEven === null ? `> ${f.runs}` : `${f.breakEven}`,
    `${f.perRun.stateFlow} / ${f.perRun.compacting}`,
    show(f.steadyVsCompacting),
    `${f.missAmplification} (${f.nativeMissAmplification})`,
    `${f.fixedOverhead}`,
    `${f.compactions}`,
  ]);
  return (
    "Cost model (bench/cost-model.ts): State Flow ÷ native Pi, input tokens priced per provider; " +
    "steady state = mean cost per run over the last half against native with compaction at 128k tokens\n" +
    table([
      [
        "workload",
        "state",
        "price model",
        "runs",
        ...RATIO_RUNS.map((k) => `ratio@${k}`),
        "break-even",
        "steady/run SF / compacting",
        "steady ratio",
        "miss ampl. (native)",
        "fixed overhead",
        "compactions",
      ],
      ...rows,
    ])
  );
}
