// The in-store migration of legacy state.json snapshots, on real file-only and Git stores whose
// legacy files the test writes (and, for Git, commits the way a predecessor would have).
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { execSync } from "node:child_process";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { readTemporalState } from "../../storage/core/temporal.ts";
import { FILE_JOURNAL_NAME } from "../../storage/cohort-basis.ts";
import { cwdKey, scopeFiles } from "../../storage/layout.ts";
import { LEGACY_STATE_FILE, legacyPaths, planLegacyMigration } from "../../storage/legacy-migration.ts";
import { openStore } from "../../storage/open-store.ts";
import { StateStore, type SessionIdentity } from "../../storage/state-store.ts";
import { StoreError } from "../../storage/store-error.ts";
import { TempDirs, git, gitTestEnv } from "../support/store-fixtures.ts";

const temp = new TempDirs();
afterEach(() => temp.cleanup());

const ID: SessionIdentity = {
  cwd: "/work/project",
  cwdKey: cwdKey("/work/project"),
  sessionId: "0b5e7a1c-0000-4000-8000-000000000001",
  sessionKey: "2026-11-30T10-00-00-000Z_0b5e7a1c-0000-4000-8000-000000000001",
};

const STATES = {
  global: { artifacts: {}, contract: { language: "en" }, working: { memory: "kept" }, response: "" },
  cwd: {
    artifacts: { "/work/project/README.md": { description: "what the project is" } },
    contract: { build: "npm test" },
    working: { next: "ship it" },
    response: "",
  },
  session: { artifacts: {}, contract: {}, working: { step: 3 }, response: "the last answer" },
} as const;

type Kind = "git" | "file";

interface Fixture {
  root: string;
  env: NodeJS.ProcessEnv;
  kind: Kind;
}

function fixture(kind: Kind): Fixture {
  const root = temp.make("sf-legacy-");
  const cfg = join(temp.make("sf-legacy-cfg-"), "gitconfig");
  writeFileSync(cfg, "");
  const env = kind === "git" ? gitTestEnv(cfg) : { ...process.env, PATH: temp.make("sf-nogit-") };
  return { root, env, kind };
}

function legacyPath(scope: "global" | "cwd" | "session"): string {
  const dir = scopeFiles(scope, ID).dir;
  return dir === "" ? LEGACY_STATE_FILE : `${dir}/${LEGACY_STATE_FILE}`;
}

/** Writes `files` (store-relative) and, in Git, commits them as the predecessor's last revision. */
function writeLegacy(f: Fixture, files: Record<string, string>): void {
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(f.root, path, ".."), { recursive: true });
    writeFileSync(join(f.root, path), text);
  }
  if (f.kind === "git") {
    git(f.root, f.env, "init", "-q");
    git(f.root, f.env, "add", "-A");
    git(f.root, f.env, "commit", "-q", "-m", "predecessor state");
  }
}

/** In a Git store a refusal resolved by editing files says how to commit the change: run exactly that. */
function followGitAdvice(f: Fixture, error: StoreError): void {
  if (f.kind !== "git") return;
  const command = /\((git -C \S+ add -A -- \S+ && git -C \S+ commit -m "[^"]+")\)/.exec(error.message)?.[1];
  expect(command, error.message).toBeDefined();
  execSync(command!, { env: f.env, stdio: "ignore" });
}

function legacyFiles(states: Partial<Record<"global" | "cwd" | "session", unknown>> = STATES) {
  return Object.fromEntries(
    Object.entries(states).map(([scope, state]) => [
      legacyPath(scope as "global"),
      `${JSON.stringify(state, null, 2)}\n`,
    ]),
  );
}

/** Every file under the root except .git, with its exact bytes. */
function tree(root: string, dir = ""): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(join(root, dir))) {
    if (name === ".git") continue;
    const rel = dir === "" ? name : `${dir}/${name}`;
    if (statSync(join(root, rel)).isDirectory()) Object.assign(out, tree(root, rel));
    else out[rel] = readFileSync(join(root, rel)).toString("base64");
  }
  return out;
}

async function open(f: Fixture): Promise<StateStore> {
  return new StateStore(await openStore({ root: f.root, env: f.env, initGit: f.kind === "git" }), ID);
}

function commits(f: Fixture): number {
  return Number(git(f.root, f.env, "rev-list", "--count", "HEAD").trim());
}

async function refusal(work: Promise<unknown>): Promise<StoreError> {
  const error = await work.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(StoreError);
  return error as StoreError;
}

describe.each(["file", "git"] as const)("legacy state.json migration (%s)", (kind) => {
  it(
    "a canonical store skips the planning: it reads nothing, " + "even while another writer is mid-publication",
    async () => {
      const f = fixture(kind);
      const store = await open(f);
      await store.start(null, "off"); // checkpoints only: the canonical format
      // Another host's publisher is mid-publication (its lock and journal on disk): every read of the
      // cohort waits for it, so a migration that planned would be refused as lock-held.
      const journal = kind === "git" ? store.store.git!.journalPath : join(f.root, FILE_JOURNAL_NAME);
      const owner = { pid: 999999, host: "another-host", generation: "other", purpose: "publication" };
      writeFileSync(store.store.lockPath, JSON.stringify({ ...owner, createdAt: new Date().toISOString() }));
      writeFileSync(journal, "{}");
      expect(await store.migrateLegacy()).toBeNull();
      // A state.json beside one of its scopes is a predecessor format: that store plans, and so waits.
      writeFileSync(join(f.root, legacyPath("global")), `${JSON.stringify(STATES.global)}\n`);
      expect(await refusal(store.migrateLegacy())).toMatchObject({ code: "lock-held" });
    },
  );

  it("plans from one snapshot without writing anything", async () => {
    const f = fixture(kind);
    writeLegacy(f, legacyFiles());
    const before = tree(f.root);
    const store = await open(f);
    const plan = planLegacyMigration(await store.store.loadCurrent(legacyPaths(ID)), ID);
    expect(plan!.scopes.map((s) => s.scope)).toEqual(["global", "cwd", "session"]);
    expect([...plan!.writes].filter(([, bytes]) => bytes === null).map(([p]) => p)).toEqual(
      ["global", "cwd", "session"].map((s) => legacyPath(s as "global")),
    );
    expect(tree(f.root)).toEqual(before);
  });

  it("every scope's state.json becomes its checkpoint with an empty tail, in one publication", async () => {
    const f = fixture(kind);
    writeLegacy(f, legacyFiles());
    const store = await open(f);
    const before = kind === "git" ? commits(f) : 0;
    const result = await store.migrateLegacy();
    expect(result!.scopes).toEqual(["global", "cwd", "session"]);
    if (kind === "git") expect(commits(f)).toBe(before + 1);
    for (const scope of ["global", "cwd", "session"] as const) {
      const files = scopeFiles(scope, ID);
      expect(() => statSync(join(f.root, legacyPath(scope)))).toThrow();
      expect(readFileSync(join(f.root, files.patches), "utf8")).toBe("");
      const checkpoint = JSON.parse(readFileSync(join(f.root, files.checkpoint), "utf8"));
      expect(checkpoint.state).toEqual(STATES[scope]);
      expect(checkpoint.through.step).toBe(0);
    }
    const runtime = await store.start(null, "off");
    for (const scope of ["global", "cwd", "session"] as const) {
      expect(readTemporalState(runtime.view, 0, scope).state).toEqual(STATES[scope]);
    }
    expect(readTemporalState(runtime.view, 0, "effective").state.working).toEqual({
      memory: "kept",
      next: "ship it",
      step: 3,
    });
    // The hot window grows from the migration origin: nothing older is offered as history.
    expect(() => readTemporalState(runtime.view, 1)).toThrow(/offset 1/);
    const next = (await store.commit(runtime, { session: { working: { step: 4 } } }, "t1")).runtime;
    expect(readTemporalState(next.view, 1, "session").state).toEqual(STATES.session);
    expect(await store.migrateLegacy()).toBeNull();
  });

  it(
    "a journal beside state.json, well-formed or not even UTF-8, is neither replayed nor needed " + "nor touched",
    async () => {
      const f = fixture(kind);
      // The predecessor's explanatory journals: the session's records steps a replay would apply on top
      // of state.json; the cwd's is bytes no decoder accepts. Written first, committed with the rest.
      const journals = {
        [`${scopeFiles("session", ID).dir}/journal.jsonl`]: Buffer.from(
          `${JSON.stringify({ op: "set", path: "working.step", value: 99 })}\n` +
            `${JSON.stringify({ transition: 4, patch: { working: { step: 4 } } })}\n`,
        ),
        [`${scopeFiles("cwd", ID).dir}/journal.jsonl`]: Buffer.from([0xff, 0xfe, 0x00, 0x7b, 0xc3, 0x28, 0x0a]),
      };
      for (const [path, bytes] of Object.entries(journals)) {
        mkdirSync(join(f.root, path, ".."), { recursive: true });
        writeFileSync(join(f.root, path), bytes);
      }
      writeLegacy(f, legacyFiles());
      const store = await open(f);
      expect((await store.migrateLegacy())!.scopes).toEqual(["global", "cwd", "session"]);
      const runtime = await store.start(null, "off");
      for (const scope of ["global", "cwd", "session"] as const)
        expect(readTemporalState(runtime.view, 0, scope).state, scope).toEqual(STATES[scope]);
      expect(() => readTemporalState(runtime.view, 1), "no step of a journal became history").toThrow(/offset 1/);
      for (const [path, bytes] of Object.entries(journals))
        expect(readFileSync(join(f.root, path)).equals(bytes), `${path} is left as it was`).toBe(true);
    },
  );

  it("a scope with a state.json and a checkpoint is an ambiguous dual snapshot; moving one away works", async () => {
    const f = fixture(kind);
    const checkpoint = scopeFiles("cwd", ID).checkpoint;
    writeLegacy(f, { ...legacyFiles({ cwd: STATES.cwd }), [checkpoint]: "{}\n" });
    const before = tree(f.root);
    const store = await open(f);
    const error = await refusal(store.migrateLegacy());
    expect(error.code).toBe("ambiguous-snapshot");
    expect(error.message).toContain(`mv ${legacyPath("cwd")} ${legacyPath("cwd")}.old`);
    expect(tree(f.root)).toEqual(before);
    // What the refusal says: keep the current one, move the other out of the store's files.
    rmSync(join(f.root, checkpoint));
    if (kind === "git") {
      git(f.root, f.env, "add", "-A");
      git(f.root, f.env, "commit", "-q", "-m", "drop the stray checkpoint");
    }
    expect((await store.migrateLegacy())!.scopes).toEqual(["cwd"]);
  });

  it("a state.json beside a tail with no checkpoint is an orphaned tail and changes nothing", async () => {
    const f = fixture(kind);
    writeLegacy(f, { ...legacyFiles({ session: STATES.session }), [scopeFiles("session", ID).patches]: "" });
    const before = tree(f.root);
    const error = await refusal((await open(f)).migrateLegacy());
    expect(error.code).toBe("orphaned-tail");
    expect(error.file).toBe(scopeFiles("session", ID).patches);
    expect(tree(f.root)).toEqual(before);
    // The advice: state.json is current here, so the tail moves out of the store; then it migrates.
    const outside = join(temp.make("sf-moved-"), "patches.jsonl");
    renameSync(join(f.root, scopeFiles("session", ID).patches), outside);
    followGitAdvice(f, error);
    expect((await (await open(f)).migrateLegacy())!.scopes).toEqual(["session"]);
  });

  it("a state.json that is not one scope's state document is refused by name and changes nothing", async () => {
    const f = fixture(kind);
    writeLegacy(f, {
      [legacyPath("global")]: `${JSON.stringify(STATES.global)}\n`,
      [legacyPath("cwd")]: `${JSON.stringify({ contract: {}, working: {} })}\n`,
    });
    const before = tree(f.root);
    const error = await refusal((await open(f)).migrateLegacy());
    expect(error.code).toBe("invalid-legacy-state");
    expect(error.message).toMatch(/artifacts.*is missing/);
    expect(tree(f.root)).toEqual(before);
    // The advice: fix the file, then start again.
    writeFileSync(join(f.root, legacyPath("cwd")), `${JSON.stringify(STATES.cwd)}\n`);
    followGitAdvice(f, error);
    expect([...(await (await open(f)).migrateLegacy())!.scopes].sort()).toEqual(["cwd", "global"]);
  });

  it("a failure after the publication restores the exact old bytes", async () => {
    const f = fixture(kind);
    // Bytes a re-serialization would not reproduce: the restore must put these back, not an equivalent.
    const odd = `{ "working": {"memory":"kept"},\r\n "contract": {"language": "en"}, "artifacts":{}, "response":"" }`;
    writeLegacy(f, { [legacyPath("global")]: odd, ...legacyFiles({ session: STATES.session }) });
    const before = tree(f.root);
    const store = await open(f);
    const error = await refusal(
      store.migrateLegacy({
        afterPublish: async () => {
          throw new Error("disk went away");
        },
      }),
    );
    expect(error.code).toBe("migration-failed");
    expect(error.message).toMatch(/disk went away.*restored exactly/);
    const after = tree(f.root);
    // The file backend keeps the empty parent directory a removed pair lived in; no file differs.
    expect(after).toEqual(before);
    expect(readFileSync(join(f.root, legacyPath("global")), "utf8")).toBe(odd);
    expect((await store.migrateLegacy())!.scopes).toEqual(["global", "session"]);
  });

  it("files changed after the publication are kept, never overwritten by the restore", async () => {
    const f = fixture(kind);
    writeLegacy(f, legacyFiles({ cwd: STATES.cwd }));
    const store = await open(f);
    const checkpoint = join(f.root, scopeFiles("cwd", ID).checkpoint);
    const error = await refusal(
      store.migrateLegacy({
        afterPublish: async () => {
          writeFileSync(checkpoint, "someone else's bytes\n");
          throw new Error("verification interrupted");
        },
      }),
    );
    expect(error.code).toBe("migration-failed");
    expect(error.message).toContain(scopeFiles("cwd", ID).checkpoint);
    expect(error.message).toMatch(/nothing was restored/);
    expect(readFileSync(checkpoint, "utf8")).toBe("someone else's bytes\n");
    const kept = `${legacyPath("cwd")}.pre-migration`;
    expect(error.message).toContain(`The old bytes are kept in ${kept}`);
    expect(readFileSync(join(f.root, kept), "utf8")).toBe(legacyFiles({ cwd: STATES.cwd })[legacyPath("cwd")]);
    // The advice: the old bytes are the current state here, so they are kept in one format.
    renameSync(join(f.root, kept), join(f.root, legacyPath("cwd")));
    rmSync(checkpoint);
    rmSync(join(f.root, scopeFiles("cwd", ID).patches));
    followGitAdvice(f, error);
    expect((await (await open(f)).migrateLegacy())!.scopes).toEqual(["cwd"]);
    const migrated = (await (await open(f)).start(null, "off")).view;
    expect(readTemporalState(migrated, 0, "cwd").state).toEqual(STATES.cwd);
  });
});

describe("legacy state.json migration (git, the legacy file not in the history)", () => {
  it("is refused with advice that keeps the file, and following it migrates", async () => {
    const f = fixture("git");
    writeLegacy(f, { "notes.md": "the user's\n" });
    writeFileSync(join(f.root, LEGACY_STATE_FILE), `${JSON.stringify(STATES.global)}\n`);
    const store = await open(f);
    const error = await refusal(store.migrateLegacy());
    expect(error.code).toBe("worktree-diverged");
    expect(error.message).toContain("Do not remove it: it is the state to migrate");
    const advice = /\((git -C \S+ add -- \S+ && git -C \S+ commit -m "predecessor state")\)/.exec(error.message)![1]!;
    execSync(advice, { env: f.env });
    expect((await store.migrateLegacy())!.scopes).toEqual(["global"]);
    expect(JSON.parse(readFileSync(join(f.root, "checkpoint.json"), "utf8")).state).toEqual(STATES.global);
  });
});
