import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { readTemporalState } from "../../storage/core/temporal.ts";
import { adoptShared, decodeBranchState, readStreams } from "../../storage/branch-state.ts";
import { cwdKey, scopeFiles } from "../../storage/layout.ts";
import { openStore } from "../../storage/open-store.ts";
import { StateStore, type SessionIdentity } from "../../storage/state-store.ts";
import { TempDirs } from "../support/store-fixtures.ts";

const temp = new TempDirs();
afterEach(() => temp.cleanup());

function identity(sessionId: string): SessionIdentity {
  return { cwd: "/w", cwdKey: cwdKey("/w"), sessionId, sessionKey: `2026-12-03T10-00-00-000Z_${sessionId}` };
}

async function fileStore(root: string, id: SessionIdentity): Promise<StateStore> {
  return new StateStore(await openStore({ root, env: { ...process.env, PATH: temp.make("sf-nogit-") } }), id);
}

const where = (root: string) => ({ root, git: false });

describe("branch state", () => {
  it("decodes a session's cohort with every pair proved, and null for a session without files", async () => {
    const root = temp.make();
    const a = await fileStore(root, identity("a"));
    const runtime = (await a.commit(await a.start(null, "off"), { global: { working: { g: 1 } } }, "t")).runtime;
    const live = await a.loadCurrentSnapshot();
    const decoded = decodeBranchState(live, identity("a"), { store: where(root) })!;
    expect(decoded.meta).toEqual(runtime.meta);
    expect(decoded.meta.stream).toMatchObject({ records: 0 });
    expect(decodeBranchState(live, identity("nobody"), { store: where(root) })).toBeNull();
    writeFileSync(join(root, scopeFiles("global", identity("a")).patches), "");
    expect(() => readStreams(live, identity("a"), where(root))).not.toThrow(); // the snapshot holds the bytes read
    const damaged = await a.loadCurrentSnapshot();
    expect(() => decodeBranchState(damaged, identity("a"), { store: where(root) })).toThrow(
      /global scope's files disagree/,
    );
  });

  it("adopts shared streams another lineage advanced at a fresh origin, keeping the session layer", async () => {
    const root = temp.make();
    const a = await fileStore(root, identity("a"));
    const ra = (await a.commit(await a.start(null, "off"), { session: { working: { mine: 1 } } }, "a1")).runtime;
    const b = await fileStore(root, identity("b"));
    await b.commit(await b.start(null, "off"), { global: { working: { g: "b" } } }, "b1");
    const view = adoptShared(ra, await a.loadCurrentSnapshot(), where(root));
    expect(view.lineage.id).not.toBe(ra.view.lineage.id);
    expect(readTemporalState(view, 0).state.working).toEqual({ g: "b", mine: 1 });
    expect(() => readTemporalState(view, 1)).toThrow();
  });
});
