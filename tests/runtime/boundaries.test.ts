// The boundaries a person can look at: the hot window from the cached view (offsets 0–7, every
// scope at the same boundary) and older ones read back from a real Git store's recorded revisions,
// where a config-only revision (a stop, a restart) dates the boundary it repeats.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  coldBoundaries,
  hotBoundaries,
  joinBoundaries,
  shortId,
  stateOf,
  type RecordedRevision,
} from "../../runtime/boundaries.ts";
import { parsePatchSet } from "../../storage/core/cohort.ts";
import { cwdKey } from "../../storage/layout.ts";
import { openStore } from "../../storage/open-store.ts";
import { StateStore, type BranchState } from "../../storage/state-store.ts";
import { TempDirs, gitTestEnv } from "../support/store-fixtures.ts";

const temps = new TempDirs();
afterEach(() => temps.cleanup());

/** A Git store with `n` transitions after its origin; every revision as the branch would record it. */
async function gitStore(n: number) {
  const cfg = join(temps.make(), "gitconfig");
  writeFileSync(cfg, "");
  const cwd = temps.make();
  const identity = {
    cwd,
    cwdKey: cwdKey(cwd),
    sessionId: "11111111-2222-7333-8444-555555555555",
    sessionKey: "2026-01-01T00-00-00-000Z_11111111-2222-7333-8444-555555555555",
  };
  const store = new StateStore(await openStore({ root: temps.make(), env: gitTestEnv(cfg), initGit: true }), identity);
  let state: BranchState = await store.start(null, "turn-end");
  const recorded: RecordedRevision[] = [{ revision: state.pointer.revision, at: "2026-01-01T00:00:00.000Z" }];
  for (let i = 1; i <= n; i++) {
    const { patches } = parsePatchSet({ session: { working: { [`k${i}`]: i } }, cwd: { contract: { last: i } } });
    state = (await store.commit(state, patches, "state-flow: test")).runtime;
    recorded.push({ revision: state.pointer.revision, at: `2026-01-01T00:00:${String(i).padStart(2, "0")}.000Z` });
  }
  return { store, state, recorded };
}

describe("boundaries", () => {
  it("the hot window holds offsets 0–7 newest first, each scope at the same boundary", async () => {
    const { state } = await gitStore(10);
    const hot = hotBoundaries(state.view);
    expect(hot.map((r) => [r.offset, r.step])).toEqual([0, 1, 2, 3, 4, 5, 6, 7].map((o) => [o, 10 - o]));
    expect(hot[3]!.states.session.working).toMatchObject({ k7: 7 });
    expect(hot[3]!.states.session.working).not.toHaveProperty("k8");
    expect(stateOf(hot[3]!, "effective").contract).toEqual({ last: 7 });
    expect(shortId(hot[0]!.id)).toMatch(/^t-[0-9a-f]{8}$/);
  });

  it("older boundaries come back from Git, one per revision, as far as asked", async () => {
    const { store, state, recorded } = await gitStore(10);
    const hot = hotBoundaries(state.view);
    const some = await coldBoundaries(store, recorded, (records) => records.length >= 9);
    expect(some.records).toHaveLength(9);
    expect(some.complete).toBe(false);
    const all = await coldBoundaries(store, recorded, () => false);
    expect(all.complete).toBe(true);
    expect(all.records.map((r) => r.step)).toEqual([10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
    expect(all.records.at(-1)!.id).toBe(all.records.at(-1)!.lineage);
    const joined = joinBoundaries(hot, all.records);
    expect(joined.map((r) => r.offset)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, null, null, null]);
    expect(joined[0]!.at).toBe("2026-01-01T00:00:10.000Z");
    expect(joined[9]!.states.session.working).toEqual({ k1: 1 });
  });

  it("a config-only revision dates its boundary from its first record; an unreadable one ends the walk", async () => {
    const { store, state, recorded } = await gitStore(2);
    const stopped = await store.publishConfig(state, { ...state.config, enabled: false }, "state-flow: stop");
    expect(stopped.pointer.revision).not.toBe(state.pointer.revision);
    const again = [
      ...recorded,
      { revision: stopped.pointer.revision, at: "2026-01-02T00:00:00.000Z" },
      { revision: recorded[2]!.revision, at: "2026-01-03T00:00:00.000Z" },
    ];
    const read = await coldBoundaries(store, again, () => false);
    expect(read.records.map((r) => r.step)).toEqual([2, 1, 0]);
    expect(read.records[0]!.at).toBe("2026-01-01T00:00:02.000Z");
    const gone = await coldBoundaries(
      store,
      [{ revision: `file:${"0".repeat(64)}`, at: null }, ...recorded],
      () => false,
    );
    expect(gone.records).toHaveLength(3);
    expect(gone.ended).toContain("recorded while the store was file-only");
  });
});
