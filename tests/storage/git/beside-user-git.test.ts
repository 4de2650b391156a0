// State Flow publishing while a user works in the store repository with their own git, all at
// once: git add, git commit -a, a commit whose editor holds index.lock, git gc --auto, git prune
// --expire=2.weeks.ago, and attributes that would filter and convert the store's files. Every
// State Flow commit must hold exactly the bytes it wrote, nothing the user staged or committed
// may be lost, and every refusal must be named. Real git processes, the real StateStore.
// The collision with the open editor is made, not hoped for: that editor stays open until a
// publication that started while it was open has been refused, so no timing decides the outcome.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { readTemporalState } from "../../../storage/core/temporal.ts";
import { cwdKey } from "../../../storage/layout.ts";
import { openStore } from "../../../storage/open-store.ts";
import { StateStore, type BranchState } from "../../../storage/state-store.ts";
import { isStoreError } from "../../../storage/store-error.ts";
import { TempDirs, git, gitTestEnv } from "../../support/store-fixtures.ts";

const temps = new TempDirs();
afterEach(() => temps.cleanup());

const COHORTS = 30;
const USER_ROUNDS = 24;

interface Outcome {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(root: string, env: NodeJS.ProcessEnv, args: string[], extra: NodeJS.ProcessEnv = {}): Promise<Outcome> {
  return new Promise((done) => {
    const child = spawn("git", args, { cwd: root, env: { ...env, ...extra } });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("close", (code) => done({ code, stdout, stderr }));
  });
}

/**
 * A user's command, retried the way a user would when git says another process holds index.lock, or
 * that HEAD moved under its commit (a State Flow cohort landed between its read and its ref update).
 * "nothing": a commit that found nothing to commit, because a State Flow cohort in between already
 * committed what the user had staged (every cohort commits the complete worktree delta).
 */
async function userGit(
  root: string,
  env: NodeJS.ProcessEnv,
  args: string[],
  extra: NodeJS.ProcessEnv = {},
): Promise<"done" | "nothing"> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const outcome = await run(root, env, args, extra);
    if (outcome.code === 0) return "done";
    if (args[0] === "commit" && outcome.code === 1 && /nothing( added)? to commit/.test(outcome.stdout))
      return "nothing";
    if (!/index\.lock|cannot lock ref 'HEAD'/.test(outcome.stderr))
      throw new Error(`git ${args.join(" ")}: ${outcome.stderr}`);
    await new Promise((done) => setTimeout(done, 5));
  }
  throw new Error(`git ${args.join(" ")} never got index.lock and HEAD`);
}

/** Resolves once `done()` holds; rejects when `command` settles first (it would never make it hold). */
async function whileRunning(command: Promise<unknown>, done: () => boolean, what: string): Promise<void> {
  let settled = false;
  void command.then(
    () => (settled = true),
    () => (settled = true),
  );
  while (!done()) {
    if (settled) throw new Error(`${what}: the command ended first`);
    await new Promise((next) => setTimeout(next, 10));
  }
}

describe("State Flow publishing beside a user's own git in the store repository", () => {
  it("every cohort commits exactly State Flow's bytes; nothing the user staged or committed is lost", async () => {
    const home = temps.make("sf-beside-");
    const cfg = join(home, "gitconfig");
    writeFileSync(
      cfg,
      '[filter "upper"]\n\tclean = tr a-z A-Z\n\tsmudge = cat\n[gc]\n\tauto = 1\n\tautoDetach = false\n',
    );
    const env = { ...gitTestEnv(cfg), HOME: home };
    const root = join(home, "state-flow");
    const identity = {
      cwd: "/work/project",
      cwdKey: cwdKey("/work/project"),
      sessionId: "0b5e7a1c-0000-4000-8000-00000000beef",
      sessionKey: "2026-12-01T10-00-00-000Z_0b5e7a1c-0000-4000-8000-00000000beef",
    };
    const store = new StateStore(await openStore({ root, env, initGit: true }), identity);
    let runtime: BranchState = await store.start(null, "off");
    mkdirSync(join(root, "notes"));
    writeFileSync(join(root, ".gitattributes"), "*.json filter=upper\n*.jsonl text eol=lf\n");
    const editor = join(home, "slow-editor.sh");
    writeFileSync(editor, '#!/bin/sh\nsleep 0.2\necho "user: edited commit" > "$1"\n', { mode: 0o755 });
    // The editor left open: it says it is open (git commit holds index.lock from before it starts until
    // after it ends), then waits for the test's word, given once State Flow has been refused meanwhile.
    const editorOpen = join(home, "editor-open");
    const editorMayClose = join(home, "editor-may-close");
    const heldEditor = join(home, "held-editor.sh");
    writeFileSync(
      heldEditor,
      '#!/bin/sh\n: > "$OPENED"\nwhile [ ! -e "$GO" ]; do sleep 0.01; done\necho "user: edited commit" > "$1"\n',
      { mode: 0o755 },
    );

    const accepted: { revision: string; files: Map<string, Buffer | null> }[] = [];
    const refusals = new Map<string, number>();
    let userDone = false;
    // held.open while the held editor is open: a publication that starts then can only be refused, by that commit.
    const held = { open: false, refusals: 0, onRefusal: null as (() => void) | null };
    // The publisher keeps going until the user is done too, so every user command overlaps publications.
    const publisher = (async () => {
      for (let j = 1; j <= COHORTS || !userDone;) {
        const patch = { working: { n: j, text: `cohort ${j}` } };
        const startedWhileHeld = held.open;
        try {
          runtime = (await store.commit(runtime, { global: patch, cwd: patch, session: patch }, `t${j}`)).runtime;
        } catch (error) {
          if (!isStoreError(error, "index-locked")) throw error;
          refusals.set(error.code, (refusals.get(error.code) ?? 0) + 1);
          if (startedWhileHeld) {
            held.refusals++;
            held.onRefusal?.();
          }
          await new Promise((done) => setTimeout(done, 50));
          continue;
        }
        // Not reached by a publication that started while the held editor was open: the test asserts it.
        if (startedWhileHeld) throw new Error(`cohort ${j} was committed past the open editor's index.lock`);
        accepted.push({ revision: runtime.pointer.revision, files: new Map(runtime.basis.files) });
        j++;
      }
    })();

    const staged = new Map<string, string>();
    const userCommits: string[] = [];
    let absorbed = 0;
    const user = (async () => {
      for (let i = 1; i <= USER_ROUNDS; i++) {
        const path = `notes/u${i}.txt`;
        writeFileSync(join(root, path), `user note ${i}\n`);
        await userGit(root, env, ["add", path]);
        staged.set(path, `user note ${i}\n`);
        if (i % 3 === 0) {
          if ((await userGit(root, env, ["commit", "-q", "-a", "-m", `user ${i}`])) === "done")
            userCommits.push(`user ${i}`);
          else absorbed++;
        }
        if (i % 8 === 4) {
          writeFileSync(join(root, path), `user note ${i}, edited\n`);
          staged.set(path, `user note ${i}, edited\n`);
          if (i === 4) {
            // An editor left open longer than a publication waits: State Flow must refuse, not commit past it.
            // --allow-empty: the editor opens even when a cohort already committed the edit (nothing left).
            const extra = { GIT_EDITOR: heldEditor, OPENED: editorOpen, GO: editorMayClose };
            const commit = userGit(root, env, ["commit", "-q", "-a", "--allow-empty"], extra);
            await whileRunning(commit, () => existsSync(editorOpen), "the held editor's commit");
            const refused = new Promise<void>((done) => (held.onRefusal = done));
            held.open = true;
            await refused;
            held.open = false;
            held.onRefusal = null;
            writeFileSync(editorMayClose, "");
            expect(await commit).toBe("done");
            userCommits.push("user: edited commit");
          } else if ((await userGit(root, env, ["commit", "-q", "-a"], { GIT_EDITOR: editor })) === "done")
            userCommits.push("user: edited commit");
          else absorbed++;
        }
        if (i % 4 === 2) {
          await userGit(root, env, ["gc", "--auto", "--quiet"]);
          await userGit(root, env, ["repack", "-d", "-q"]);
          await userGit(root, env, ["prune", "--expire=2.weeks.ago"]);
        }
      }
      userDone = true;
    })();
    await Promise.all([publisher, user]);

    // Every State Flow commit holds exactly the bytes it wrote, unfiltered.
    expect(accepted.length).toBeGreaterThanOrEqual(COHORTS);
    for (const { revision, files } of accepted) {
      for (const [path, bytes] of files) {
        if (bytes === null) continue;
        expect(git(root, env, "cat-file", "blob", `${revision}:${path}`), `${revision}:${path}`).toBe(bytes.toString());
      }
    }
    // Every refusal was the named index-locked one; the open editor's commit caused one by construction.
    expect([...refusals.keys()]).toEqual(["index-locked"]);
    expect(held.refusals).toBeGreaterThanOrEqual(1);
    // Nothing the user staged or committed is lost.
    for (const [path, text] of staged) expect(git(root, env, "show", `:${path}`), path).toBe(text);
    const log = git(root, env, "log", "--format=%s").split("\n");
    for (const subject of userCommits) expect(log, subject).toContain(subject);
    expect(log.filter((s) => /^t\d+$/.test(s))).toHaveLength(accepted.length);
    // The store reads back as current, at the last cohort, and the repository is sound.
    const current = (await store.loadCurrent())!;
    for (const scope of ["global", "cwd", "session"] as const) {
      expect(readTemporalState(current.view, 0, scope).state.working.n).toBe(accepted.length);
    }
    expect(git(root, env, "fsck", "--full", "--strict", "--no-dangling")).toBe("");
    console.log(
      `beside-user-git: ${accepted.length} cohorts, refusals ${JSON.stringify([...refusals])} ` +
        `(${held.refusals} while the editor was held open), ` +
        `${userCommits.length} user commits, ${absorbed} found their changes already in a cohort`,
    );
  }, 120_000);
});
