// Revision-linked predecessor snapshots on real Git stores. The fixtures are written by hand from
// spec 001 "Existing stores and migration": an older version kept each scope's current state as
// one state.json document ("An existing current state.json becomes the initial checkpoint state")
// beside an explanatory journal ("Historical legacy restoration reads only the authoritative
// current snapshots, not explanatory journals"), and the branch names the commit holding them.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { readTemporalState } from "../../storage/core/temporal.ts";
import { cwdKey, scopeFiles } from "../../storage/layout.ts";
import { openStore } from "../../storage/open-store.ts";
import { placeSessionBase, readPredecessorSnapshot } from "../../storage/predecessor-snapshot.ts";
import { StateStore, type SessionIdentity } from "../../storage/state-store.ts";
import { isStoreError } from "../../storage/store-error.ts";
import { TempDirs, git, initRepo } from "../support/store-fixtures.ts";

const temps = new TempDirs();
afterEach(() => temps.cleanup());

const ID: SessionIdentity = {
  cwd: "/work/project",
  cwdKey: cwdKey("/work/project"),
  sessionId: "0b5e7a1c-0000-4000-8000-000000000002",
  sessionKey: "2026-11-30T10-00-00-000Z_0b5e7a1c-0000-4000-8000-000000000002",
};
const SESSION = scopeFiles("session", ID);
const STATE = { artifacts: {}, contract: { goal: "ship" }, working: { step: 4 }, response: "step 4 done" };

/** Writes `files` (store-relative), commits them and returns the commit. */
function commit(dir: string, env: NodeJS.ProcessEnv, files: Record<string, string | null>, message: string): string {
  for (const [path, text] of Object.entries(files)) {
    if (text === null) git(dir, env, "rm", "-q", "--", path);
    else {
      mkdirSync(join(dir, path, ".."), { recursive: true });
      writeFileSync(join(dir, path), text);
    }
  }
  git(dir, env, "add", "-A");
  git(dir, env, "commit", "-q", "-m", message);
  return git(dir, env, "rev-parse", "HEAD").trim();
}

const json = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;

/** A predecessor's store: its session state.json and an explanatory journal that is not even JSON. */
async function predecessorStore(state: unknown = STATE) {
  const repo = initRepo(temps, "sf-pred-");
  const revision = commit(
    repo.dir,
    repo.env,
    {
      "state.json": json({ artifacts: {}, contract: { tone: "terse" }, working: {}, response: "" }),
      [`${SESSION.dir}/state.json`]: json(state),
      [`${SESSION.dir}/journal.jsonl`]: "this explanatory journal is not JSON and is never read\n",
    },
    "predecessor state",
  );
  const store = await openStore({ root: repo.dir, env: repo.env });
  return { ...repo, store, revision };
}

describe("readPredecessorSnapshot", () => {
  it("reads the session's state.json at the revision only, whatever the live files hold now", async () => {
    const { dir, env, store, revision } = await predecessorStore();
    commit(dir, env, { [`${SESSION.dir}/state.json`]: json({ ...STATE, working: { step: 5 } }) }, "later");
    const snapshot = await readPredecessorSnapshot(store, ID, revision);
    expect(snapshot).toMatchObject({ revision, path: `${SESSION.dir}/state.json`, state: STATE });
    expect(snapshot!.hash).toMatch(/^sha256:/);
  });

  it("is null for a revision without this session's state.json, or with its runtime files", async () => {
    const { dir, env, store } = await predecessorStore();
    const other = commit(dir, env, { [`${SESSION.dir}/state.json`]: null }, "session gone");
    expect(await readPredecessorSnapshot(store, ID, other)).toBeNull();
    const current = commit(
      dir,
      env,
      { [`${SESSION.dir}/state.json`]: json(STATE), [SESSION.meta]: "{}", [SESSION.config!]: "{}" },
      "runtime files",
    );
    expect(await readPredecessorSnapshot(store, ID, current)).toBeNull();
    expect(await readPredecessorSnapshot(store, ID, "file:" + "a".repeat(64))).toBeNull();
  });

  it("refuses by name what the in-store migration refuses: two snapshots, an orphaned tail, a non-state", async () => {
    const { dir, env, store } = await predecessorStore();
    const dual = commit(dir, env, { [SESSION.checkpoint]: "{}" }, "dual");
    await expect(readPredecessorSnapshot(store, ID, dual)).rejects.toSatisfy((e) =>
      isStoreError(e, "ambiguous-snapshot"),
    );
    const orphan = commit(dir, env, { [SESSION.checkpoint]: null, [SESSION.patches]: "{}\n" }, "orphan");
    await expect(readPredecessorSnapshot(store, ID, orphan)).rejects.toSatisfy((e) => isStoreError(e, "orphaned-tail"));
    const invalid = commit(dir, env, { [SESSION.patches]: null, [`${SESSION.dir}/state.json`]: "[1]" }, "bad");
    await expect(readPredecessorSnapshot(store, ID, invalid)).rejects.toSatisfy((e) =>
      isStoreError(e, "invalid-legacy-state"),
    );
  });
});

describe("placeSessionBase", () => {
  it("makes the snapshot the session base a start builds on, once, without touching other scopes", async () => {
    const { dir, env, store, revision } = await predecessorStore();
    // A later runtime of this session, whose live files the restored branch replaces (they stay in Git).
    const later = commit(
      dir,
      env,
      {
        [`${SESSION.dir}/state.json`]: null,
        [SESSION.checkpoint]: "{}",
        [SESSION.meta]: "{}",
        [SESSION.config!]: "{}",
      },
      "a later runtime",
    );
    const snapshot = (await readPredecessorSnapshot(store, ID, revision))!;
    expect(await placeSessionBase(store, ID, snapshot)).toBe(true);
    expect(git(dir, env, "ls-files", "--", SESSION.dir).trim().split("\n").sort()).toEqual(
      [SESSION.checkpoint, `${SESSION.dir}/journal.jsonl`, SESSION.patches].sort(),
    );
    expect(await placeSessionBase(store, ID, snapshot), "already the base: nothing published").toBe(false);
    const state = new StateStore(store, ID);
    await state.migrateLegacy(); // the global state.json, as a start does
    const runtime = await state.start(null, "off");
    expect(readTemporalState(runtime.view, 0, "session").state).toEqual(STATE);
    expect(readTemporalState(runtime.view, 0, "global").state.contract).toEqual({ tone: "terse" });
    expect(git(dir, env, "cat-file", "-t", later).trim(), "the replaced runtime stays in Git").toBe("commit");
    expect(git(dir, env, "show", `${revision}:${SESSION.dir}/state.json`)).toBe(json(STATE));
  });
});
