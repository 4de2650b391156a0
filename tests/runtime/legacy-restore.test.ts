// Restoring a revision in an older store form, on real Git stores written by hand from spec 001
// "Existing stores and migration": the pre-0.4 layout ("appended SHA-256 suffixes"; "readable at
// its historical Git revisions"; "if the selected layout is current HEAD, startup adopts [it] ...
// and an immediate replacement revision pointer") and a predecessor's state.json snapshots
// ("revision-linked predecessor snapshots have a one-way restoration path").
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parsePatchSet } from "../../storage/core/cohort.ts";
import { readTemporalState } from "../../storage/core/temporal.ts";
import { restoreOlderRevision } from "../../runtime/legacy-restore.ts";
import { cwdKey, scopeFiles } from "../../storage/layout.ts";
import { openStore } from "../../storage/open-store.ts";
import { StateStore, type SessionIdentity } from "../../storage/state-store.ts";
import { isStoreError } from "../../storage/store-error.ts";
import { TempDirs, git, initRepo } from "../support/store-fixtures.ts";
import { preFourRepo, suffixedDirs } from "../support/pre-four.ts";

const temps = new TempDirs();
afterEach(() => temps.cleanup());

const ID: SessionIdentity = {
  cwd: "/work/project",
  cwdKey: cwdKey("/work/project"),
  sessionId: "0b5e7a1c-0000-4000-8000-000000000004",
  sessionKey: "2026-06-01T08-00-00-000Z_0b5e7a1c-0000-4000-8000-000000000004",
};
const { cwdDir: CWD_DIR, sessionDir: SESSION_DIR } = suffixedDirs(ID);

async function preFourStore() {
  const repo = await preFourRepo(temps, "sf-older-", ID, 2);
  return { ...repo, store: new StateStore(await openStore({ root: repo.dir, env: repo.env }), ID) };
}

const json = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;
const STATES = {
  global: { artifacts: {}, contract: { tone: "terse" }, working: {}, response: "" },
  cwd: { artifacts: {}, contract: { build: "make" }, working: {}, response: "" },
  session: { artifacts: {}, contract: {}, working: { step: 7 }, response: "seven" },
};

/** A predecessor's Git store: one state.json per scope and an explanatory journal, committed. */
async function predecessorStore() {
  const repo = initRepo(temps, "sf-older-pred-");
  for (const scope of ["global", "cwd", "session"] as const) {
    const dir = scopeFiles(scope, ID).dir;
    mkdirSync(join(repo.dir, dir), { recursive: true });
    writeFileSync(join(repo.dir, dir, "state.json"), json(STATES[scope]));
  }
  writeFileSync(join(repo.dir, scopeFiles("session", ID).dir, "journal.jsonl"), "not JSON, never read\n");
  git(repo.dir, repo.env, "add", "-A");
  git(repo.dir, repo.env, "commit", "-q", "-m", "predecessor");
  const revision = git(repo.dir, repo.env, "rev-parse", "HEAD").trim();
  return { ...repo, store: new StateStore(await openStore({ root: repo.dir, env: repo.env }), ID), revision };
}

describe("restoreOlderRevision: the pre-0.4 layout", () => {
  it("selected at HEAD: adopted into Pi-native paths, replaced by the adoption revision, history intact", async () => {
    const f = await preFourStore();
    const restored = (await restoreOlderRevision(f.store, f.revision, "off"))!;
    expect(restored.replaces).toBe(true);
    expect(restored.runtime.pointer.revision).not.toBe(f.revision);
    expect(restored.runtime.view).toEqual(f.before.view);
    expect(readTemporalState(restored.runtime.view, 2, "session").state.working).toEqual({});
    expect(restored.notices).toEqual([expect.stringContaining(`The branch now records`)]);
    expect(existsSync(join(f.dir, CWD_DIR, "meta.json"))).toBe(false);
    expect(
      git(f.dir, f.env, "show", `${f.revision}:${SESSION_DIR}/meta.json`),
      "the old layout stays in Git",
    ).toBeTruthy();
  });

  it("selected at an older revision: HEAD's layout is adopted, the selection is read where it is", async () => {
    const f = await preFourStore();
    git(f.dir, f.env, "commit", "-q", "--allow-empty", "-m", "later, still pre-0.4");
    const restored = (await restoreOlderRevision(f.store, f.revision, "off"))!;
    expect(restored.replaces).toBe(false);
    expect(restored.runtime.pointer.revision).toBe(f.revision);
    expect(restored.runtime.view).toEqual(f.before.view);
    expect(restored.notices).toEqual([expect.stringContaining("is older and is read as it is there")]);
    // Its next transition lands in the Pi-native layout, on top of the adopted shared scopes.
    const { patches } = parsePatchSet({ session: { working: { n: 3 } } });
    const { runtime } = await f.store.commit(restored.runtime, patches, "next");
    expect(readTemporalState(runtime.view, 0).state.working).toEqual({ n: 3 });
    expect(readTemporalState(runtime.view, 0, "cwd").state.working).toEqual({ n: 2 });
    expect(git(f.dir, f.env, "ls-files", "--", CWD_DIR)).toBe("");
    // Read again later (the layout is gone from HEAD): the same runtime, nothing to adopt, nothing said.
    const again = (await restoreOlderRevision(f.store, f.revision, "off"))!;
    expect(again.notices).toEqual([]);
    expect(again.runtime.view).toEqual(f.before.view);
  });
});

describe("restoreOlderRevision: a predecessor's state.json snapshot", () => {
  it("migrates the live state.json files, builds the runtime on the snapshot, and replaces the revision", async () => {
    const f = await predecessorStore();
    const restored = (await restoreOlderRevision(f.store, f.revision, "off"))!;
    expect(restored.replaces).toBe(true);
    expect(restored.runtime.config).toMatchObject({ enabled: true, remotePublication: "off" });
    for (const scope of ["global", "cwd", "session"] as const)
      expect(readTemporalState(restored.runtime.view, 0, scope).state, scope).toEqual(STATES[scope]);
    expect(restored.notices).toEqual([
      expect.stringContaining("migrated the legacy state.json of the global, cwd, session scope(s)"),
      expect.stringContaining(`older version's state.json snapshot (revision ${f.revision.slice(0, 12)})`),
    ]);
    expect(() => readTemporalState(restored.runtime.view, 1), "no history is fabricated").toThrow();
    expect(git(f.dir, f.env, "show", `${f.revision}:${scopeFiles("session", ID).dir}/state.json`)).toBe(
      json(STATES.session),
    );
  });

  it("restores the branch's snapshot, not the session's later live state", async () => {
    const f = await predecessorStore();
    const path = join(f.dir, scopeFiles("session", ID).dir, "state.json");
    writeFileSync(path, json({ ...STATES.session, working: { step: 8 } }));
    git(f.dir, f.env, "commit", "-q", "-am", "a later step");
    const restored = (await restoreOlderRevision(f.store, f.revision, "turn-end"))!;
    expect(readTemporalState(restored.runtime.view, 0, "session").state).toEqual(STATES.session);
    const head = git(f.dir, f.env, "rev-parse", "HEAD").trim();
    expect(restored.runtime.pointer.revision).toBe(head);
  });

  it("is null where the revision holds neither form; a missing commit is revision-missing", async () => {
    const f = await predecessorStore();
    git(f.dir, f.env, "rm", "-q", "-r", "--", scopeFiles("session", ID).dir);
    git(f.dir, f.env, "commit", "-q", "-m", "session gone");
    expect(await restoreOlderRevision(f.store, git(f.dir, f.env, "rev-parse", "HEAD").trim(), "off")).toBeNull();
    await expect(restoreOlderRevision(f.store, "f".repeat(40), "off")).rejects.toSatisfy((e) =>
      isStoreError(e, "revision-missing"),
    );
  });
});
