// Property-based check of the temporal core against a naive full-snapshot oracle: random cohorts
// over a small key space (so merges, deletions, no-ops and folding collide often), compared at
// every available offset and scope after every accepted transition, plus a codec round trip.

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parsePatchSet, stageCohort } from "../../../storage/core/cohort.ts";
import { parseScopeStream, serializeScopeStream } from "../../../storage/core/codec.ts";
import { StateFlowError } from "../../../storage/core/errors.ts";
import { SCOPES, type ScopeSelector } from "../../../storage/core/scope-state.ts";
import {
  availableOffsets,
  createView,
  originateView,
  readTemporalState,
  type TemporalView,
} from "../../../storage/core/temporal.ts";
import { SnapshotOracle, stableStringify, type Scope } from "../../support/oracle.ts";

export const PROPERTY_RUNS = 300;

const key = fc.constantFrom("a", "b", "c", "__proto__", "constructor");
const leaf = fc.oneof(
  fc.integer({ min: 0, max: 3 }),
  fc.constantFrom("x", "y", true),
  fc.array(fc.integer({ min: 0, max: 2 }), { maxLength: 2 }),
);
const patchValue: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: "small" }, leaf, fc.constant(null), tie("object")),
  object: fc.dictionary(key, tie("value"), { maxKeys: 3 }),
})).value;
const fieldPatch = fc.dictionary(key, patchValue, { minKeys: 1, maxKeys: 3 });
const scopePatch = fc
  .record({ working: fieldPatch, contract: fieldPatch }, { requiredKeys: [] })
  .filter((p) => Object.keys(p).length > 0);
const cohort = fc
  .record({ global: scopePatch, cwd: scopePatch, session: scopePatch }, { requiredKeys: [] })
  .filter((c) => Object.keys(c).length > 0);

function sameAsOracle(view: TemporalView, oracle: SnapshotOracle): void {
  expect(availableOffsets(view.lineage)).toBe(oracle.available);
  for (let offset = 0; offset < oracle.available; offset++) {
    for (const scope of ["effective", ...SCOPES] as ScopeSelector[]) {
      const actual = stableStringify(readTemporalState(view, offset, scope).state);
      expect(actual, `offset ${offset} ${scope}`).toBe(stableStringify(oracle.at(offset, scope)));
    }
  }
}

describe("temporal core vs naive snapshot oracle (fast-check)", () => {
  it(`random cohort sequences match the oracle at every offset and scope (${PROPERTY_RUNS} runs)`, () => {
    fc.assert(
      fc.property(fc.array(cohort, { minLength: 1, maxLength: 24 }), (cohorts) => {
        let view = originateView("L");
        const oracle = new SnapshotOracle();
        cohorts.forEach((input, i) => {
          let changed = true;
          try {
            const { patches } = parsePatchSet(structuredClone(input));
            view = stageCohort(view, patches, `T${i}`).view;
          } catch (error) {
            if (!(error instanceof StateFlowError) || error.code !== "no-op-cohort") throw error;
            changed = false;
          }
          expect(oracle.apply(input as Partial<Record<Scope, Record<string, unknown>>>)).toBe(changed);
          sameAsOracle(view, oracle);
        });
        const streams = Object.fromEntries(
          SCOPES.map((s) => [s, parseScopeStream(s, serializeScopeStream(view.streams[s]))]),
        ) as TemporalView["streams"];
        sameAsOracle(createView(structuredClone(view.lineage), streams), oracle);
      }),
      { numRuns: PROPERTY_RUNS },
    );
  });
});
