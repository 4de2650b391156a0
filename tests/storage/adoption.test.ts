// Adopting an active file-only branch into Git when Git may already hold its exact cohort
// (storage/adoption.ts): real file-only and Git stores over one directory, the user's own git
// commits and staging beside them.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { reuseAnchoredCohort } from "../../storage/adoption.ts";
import { cwdKey, scopeFiles } from "../../storage/layout.ts";
import { openStore } from "../../storage/open-store.ts";
import { StateStore, type BranchState, type SessionIdentity } from "../../storage/state-store.ts";
import { TempDirs, git, gitTestEnv } from "../support/store-fixtures.ts";

const temp = new TempDirs();
afterEach(() => temp.cleanup());

function identity(sessionId: string): SessionIdentity {
  const cwd = "/work/project";
  return { cwd, cwdKey: cwdKey(cwd), sessionId, sessionKey: `2026-11-30T10-00-00-000Z_${sessionId}` };
}

async function open(kind: "git" | "file", root: string, id: SessionIdentity): Promise<StateStore> {
  const globalConfig = join(temp.make("sf-gitcfg-"), "gitconfig");
  writeFileSync(globalConfig, "");
  const env = kind === "git" ? gitTestEnv(globalConfig) : { ...process.env, PATH: temp.make("sf-nogit-") };
  const store = await openStore({ root, env, initGit: kind === "git" });
  expect(store.kind).toBe(kind);
  return new StateStore(store, id);
}

/** The user's own git, in the store repository. */
const user = (root: string, ...args: string[]) =>
  git(root, process.env, "-c", "user.name=u", "-c", "user.email=u@state-flow.invalid", ...args);

/**
 * Session A is active file-only with one transition; then Git arrives and session B's start
 * initializes the repository over the files, A's included: Git holds A's exact cohort.
 */
async function anchoredBranch(): Promise<{ root: string; a: BranchState; owner: string }> {
  const root = temp.make();
  const fileA = await open("file", root, identity("A"));
  let a = await fileA.start(null, "off");
  a = (await fileA.commit(a, { cwd: { contract: { lang: "ts" } }, session: { working: { mine: "A" } } }, "a1")).runtime;
  expect(a.pointer.revision).toMatch(/^file:/);
  const b = await open("git", root, identity("B"));
  const owner = (await b.start(null, "off")).pointer.revision;
  return { root, a, owner };
}

describe("adopting a file-only branch whose cohort Git already holds", () => {
  it(
    "an identical cohort reuses the commit that owns it: nothing is committed, " +
      "the index and the user's staging stay as they were",
    async () => {
      const { root, a, owner } = await anchoredBranch();
      // The user works in the store repository meanwhile: a commit of their own, then a staged file.
      writeFileSync(join(root, "README.md"), "mine\n");
      user(root, "add", "README.md");
      user(root, "commit", "-qm", "user: readme");
      writeFileSync(join(root, "notes.md"), "staged by the user\n");
      user(root, "add", "notes.md");
      const head = user(root, "rev-parse", "HEAD").trim();
      const index = readFileSync(join(root, ".git", "index"));

      const gitA = await open("git", root, identity("A"));
      const reused = await reuseAnchoredCohort(gitA, a);
      // The owner is the commit that wrote A's files, not the user's later HEAD.
      expect(reused?.pointer).toEqual({ revision: owner });
      expect(reused!.view).toEqual(a.view);
      expect(reused!.meta).toEqual(a.meta);
      expect(user(root, "rev-parse", "HEAD").trim()).toBe(head);
      expect(readFileSync(join(root, ".git", "index")).equals(index), "the index is not rewritten").toBe(true);
      expect(user(root, "show", ":notes.md")).toBe("staged by the user\n");
      expect(user(root, "status", "--porcelain")).toBe("A  notes.md\n");
      // The branch goes on from there with ordinary commits.
      const next = (await gitA.commit(reused!, { session: { working: { mine: "A", later: true } } }, "a2")).runtime;
      expect(next.meta.predecessor).toBe(owner);
      expect(user(root, "rev-list", "--count", `${head}..${next.pointer.revision}`).trim()).toBe("1");
    },
  );

  it("one byte of one member short of it: no reuse, and the adoption commits the complete current files", async () => {
    const { root, a } = await anchoredBranch();
    // HEAD's copy of A's session checkpoint differs by one byte (committed by hand); the live file is A's.
    const checkpoint = scopeFiles("session", identity("A")).checkpoint;
    const bytes = readFileSync(join(root, checkpoint));
    const flipped = Buffer.from(bytes);
    flipped[flipped.length - 2] = flipped[flipped.length - 2]! ^ 1;
    writeFileSync(join(root, checkpoint), flipped);
    user(root, "commit", "-qam", "user: one byte");
    writeFileSync(join(root, checkpoint), bytes);
    writeFileSync(join(root, "notes.md"), "staged by the user\n");
    user(root, "add", "notes.md");
    const before = Number(user(root, "rev-list", "--count", "HEAD"));

    const gitA = await open("git", root, identity("A"));
    expect(await reuseAnchoredCohort(gitA, a)).toBeNull();
    const adopted = await gitA.start(a, "off");
    expect(Number(user(root, "rev-list", "--count", "HEAD"))).toBe(before + 1);
    expect(user(root, "rev-parse", "HEAD").trim()).toBe(adopted.pointer.revision);
    expect(Buffer.from(user(root, "show", `HEAD:${checkpoint}`)).equals(bytes)).toBe(true);
    expect(adopted.view).toEqual(a.view);
    // The commit took the complete worktree delta, the user's staged file included: nothing was lost.
    expect(user(root, "show", "HEAD:notes.md")).toBe("staged by the user\n");
    expect(user(root, "status", "--porcelain")).toBe("");
  });

  it("a stopped branch is never reused: its start changes the config, which is a commit", async () => {
    const { root, a } = await anchoredBranch();
    const gitA = await open("git", root, identity("A"));
    expect(await reuseAnchoredCohort(gitA, { ...a, config: { ...a.config, enabled: false } })).toBeNull();
    expect(await reuseAnchoredCohort(await open("file", root, identity("A")), a), "file-only: nothing to reuse").toBe(
      null,
    );
  });
});
