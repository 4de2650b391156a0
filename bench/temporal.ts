// Benchmark of the pure temporal core: per-transition cost (validate + stage + materialize +
// encode the changed checkpoint/tail bytes) and per-offset read cost, at 8 KiB, 128 KiB and
// 1 MiB of state, each as a ratio to JSON.stringify + JSON.parse of the same state measured in
// the same run. Ends with one `BENCH {json}` line for comparison across commits.

import { parsePatchSet, stageCohort } from "../storage/core/cohort.ts";
import { serializeScopeStream } from "../storage/core/codec.ts";
import { SCOPES } from "../storage/core/scope-state.ts";
import { originateView, readTemporalState, type TemporalView } from "../storage/core/temporal.ts";

const SIZES = [
  { label: "8KiB", bytes: 8 * 1024, iterations: 400 },
  { label: "128KiB", bytes: 128 * 1024, iterations: 60 },
  { label: "1MiB", bytes: 1024 * 1024, iterations: 12 },
];

function median(samples: number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

function time(iterations: number, fn: (i: number) => void): number {
  for (let i = 0; i < Math.min(5, iterations); i++) fn(-1 - i);
  const samples: number[] = [];
  for (let i = 0; i < iterations; i++) {
    const start = process.hrtime.bigint();
    fn(i);
    samples.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  return median(samples);
}

/** A working map of realistic entries whose JSON is about `bytes` long. */
function payload(bytes: number, prefix: string): Record<string, unknown> {
  const entries: Record<string, unknown> = {};
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const entry = { observation: `verified result ${i} `.repeat(3), refs: [i, i + 1], ok: i % 2 === 0 };
    entries[`${prefix}-${i}`] = entry;
    size += JSON.stringify(entry).length + 12;
  }
  return entries;
}

function seeded(bytes: number): TemporalView {
  let view = originateView("bench");
  const third = Math.floor(bytes / 3);
  view = stageCohort(
    view,
    parsePatchSet({
      global: { working: payload(third, "g") },
      cwd: { working: payload(third, "c") },
      session: { working: payload(third, "s") },
    }).patches,
    "seed",
  ).view;
  // Fill every tail so each measured transition also folds one record into the checkpoint.
  for (let i = 0; i < 8; i++) {
    view = stageCohort(
      view,
      parsePatchSet({ session: { working: { counter: i } }, cwd: { working: { counter: i } } }).patches,
      `warm-${i}`,
    ).view;
  }
  return view;
}

const results: Record<string, Record<string, number>> = {};
console.log("size     baseline(ms)  transition(ms)  ratio   read[0](ms) ratio   read[7](ms) ratio");
for (const size of SIZES) {
  let view = seeded(size.bytes);
  const effective = readTemporalState(view).state;
  const baseline = time(size.iterations, () => JSON.parse(JSON.stringify(effective)));

  let n = 0;
  const transition = time(size.iterations, () => {
    n++;
    const { patches } = parsePatchSet({
      session: { working: { counter: n, note: `step ${n}` } },
      cwd: { working: { counter: n } },
    });
    const staged = stageCohort(view, patches, `t-${n}`);
    for (const scope of SCOPES) if (staged.cohort.records[scope]) serializeScopeStream(staged.view.streams[scope]);
    view = staged.view;
  });

  const reads: number[] = [];
  for (let offset = 0; offset < 8; offset++) {
    reads.push(time(Math.max(3, Math.floor(size.iterations / 2)), () => readTemporalState(view, offset, "effective")));
  }
  const row = {
    stateBytes: JSON.stringify(effective).length,
    baselineMs: baseline,
    transitionMs: transition,
    transitionRatio: transition / baseline,
    ...Object.fromEntries(reads.map((ms, i) => [`read${i}Ratio`, ms / baseline])),
  };
  results[size.label] = row;
  console.log(
    `${size.label.padEnd(8)} ${baseline.toFixed(3).padStart(12)}  ` +
      `${transition.toFixed(3).padStart(14)}  ${row.transitionRatio.toFixed(2).padStart(5)}x ` +
      `${reads[0]!.toFixed(3).padStart(11)} ${(reads[0]! / baseline).toFixed(2).padStart(5)}x ` +
      `${reads[7]!.toFixed(3).padStart(11)} ${(reads[7]! / baseline).toFixed(2).padStart(5)}x`,
  );
}
console.log(`BENCH ${JSON.stringify({ bench: "temporal", results })}`);
