// The Git backend beside a user's own git in the same store repository: attributes and filters,
// staging and committing while a publication runs, a held index.lock, git's own gc, a chmod, and
// what a killed publication leaves. Real git in temp directories; a user's command runs as a real
// process at an exact publication step (observeKillPoints), never a mock.

import { spawn, spawnSync } from "node:child_process";
import { chmodSync, existsSync, readFileSync, readdirSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openGitBackend, type GitBackend } from "../../../storage/git/git-backend.ts";
import { findGitExecutable } from "../../../storage/git/git-runner.ts";
import { gitObjectId } from "../../../storage/git/plumbing/git-objects.ts";
import { observeKillPoints, type KillPoint } from "../../../storage/fs/crash-points.ts";
import { TempDirs, git, gitTestEnv, cohortFixture } from "../../support/store-fixtures.ts";

const temps = new TempDirs();
afterEach(() => {
  observeKillPoints(null);
  temps.cleanup();
});
const { paths, g, c, s } = cohortFixture();
const GIT = findGitExecutable()!;

async function repo(globalConfig = "") {
  const home = temps.make("sf-usergit-");
  const cfg = join(home, "gitconfig");
  writeFileSync(cfg, globalConfig);
  const env: NodeJS.ProcessEnv = { ...gitTestEnv(cfg), HOME: home };
  const root = join(home, "state-flow");
  const backend = (await openGitBackend({ root, binary: GIT, env, generation: "test", init: true }))!;
  return { root, env, backend, home };
}

function cohort(n: number, eol = "\n"): Map<string, Buffer> {
  return new Map(
    paths.map((path) => [path, Buffer.from(`{"n":${n},"path":"${path}"}${eol}{"more":${n}}${eol}`)] as const),
  );
}

async function publish(backend: GitBackend, writes: Map<string, Buffer | null>) {
  return backend.publish({ basis: await backend.loadCurrent(paths), writes });
}

/** Runs `action` (a real git process) once, when the publication first reaches `point`. */
function at(point: KillPoint, action: () => void): void {
  let done = false;
  observeKillPoints((reached) => {
    if (done || reached !== point) return;
    done = true;
    action();
  });
}

function run(root: string, env: NodeJS.ProcessEnv, ...args: string[]) {
  return spawnSync("git", args, { cwd: root, env, encoding: "utf8" });
}

function committed(root: string, env: NodeJS.ProcessEnv, revision: string, path: string): Buffer {
  return spawnSync("git", ["cat-file", "blob", `${revision}:${path}`], { cwd: root, env }).stdout;
}

/** A pid no process has now: a child that already exited. */
function deadPid(): number {
  return spawnSync(process.execPath, ["-e", ""]).pid;
}

describe("a user's attributes and modes", () => {
  it("an eol attribute never re-stages earlier cohorts' store files: the next load is not diverged", async () => {
    const { root, env, backend } = await repo();
    writeFileSync(join(root, ".gitattributes"), "*.json text eol=lf\n*.jsonl text eol=lf\n");
    const first = cohort(1, "\r\n");
    await publish(backend, first);
    const second = await publish(backend, new Map([[s.meta, Buffer.from("two\r\n")]]));
    for (const path of paths.filter((p) => p !== s.meta))
      expect(committed(root, env, second.pointer.revision, path), path).toEqual(first.get(path));
    await expect(backend.loadCurrent(paths)).resolves.toMatchObject({ pointer: second.pointer });
    git(root, env, "fsck", "--strict", "--no-progress");
  });

  it(
    "a global filter attribute reaches neither path's commits (in-process and git's update-index), " +
      "while the user's own files keep it",
    async () => {
      const { root, env, backend, home } = await repo();
      const attributes = join(home, "attributes");
      writeFileSync(attributes, "*.json filter=upper\n*.jsonl filter=upper\n");
      git(home, env, "config", "--global", "core.attributesFile", attributes);
      git(home, env, "config", "--global", "filter.upper.clean", "tr a-z A-Z");
      git(home, env, "config", "--global", "filter.upper.smudge", "cat");
      writeFileSync(join(root, "notes.json"), "user notes\n");
      const first = cohort(1);
      await publish(backend, first);
      const second = await publish(backend, new Map([[s.meta, Buffer.from("two\n")]]));
      // git's own update-index + write-tree path (a skip-worktree entry), then the in-process one again
      git(root, env, "update-index", "--skip-worktree", "notes.json");
      const third = await publish(backend, new Map([[c.meta, Buffer.from("three\n")]]));
      for (const revision of [second.pointer.revision, third.pointer.revision])
        for (const path of paths.filter((p) => p !== s.meta && p !== c.meta))
          expect(committed(root, env, revision, path).toString(), `${path}@${revision}`).toBe(
            first.get(path)!.toString(),
          );
      expect(committed(root, env, second.pointer.revision, "notes.json").toString()).toBe("USER NOTES\n");
      await expect(backend.loadCurrent(paths)).resolves.toMatchObject({ pointer: third.pointer });
    },
  );

  it("a chmod +x on a store file does not flip its committed mode; a user's file keeps its own", async () => {
    const { root, env, backend } = await repo();
    writeFileSync(join(root, "run.sh"), "#!/bin/sh\n");
    await publish(backend, cohort(1));
    chmodSync(join(root, g.checkpoint), 0o755);
    chmodSync(join(root, "run.sh"), 0o755);
    const second = await publish(backend, new Map([[s.meta, Buffer.from("two")]]));
    const third = await publish(backend, new Map([[g.checkpoint, Buffer.from("three")]]));
    for (const revision of [second.pointer.revision, third.pointer.revision]) {
      const modes = git(root, env, "ls-tree", "-r", revision)
        .trim()
        .split("\n")
        .map((line) => `${line.split("\t")[1]} ${line.split(" ")[0]}`);
      expect(
        modes.filter((line) => !line.startsWith("run.sh")),
        revision,
      ).toEqual(paths.map((p) => `${p} 100644`));
      expect(modes, revision).toContain("run.sh 100755");
    }
  });
});

describe("a user's git while a publication runs", () => {
  it("an entry the user stages during a publication stays staged; the receipt says the index is synced", async () => {
    const { root, env, backend } = await repo();
    writeFileSync(join(root, "notes.md"), "one\n");
    await publish(backend, cohort(1));
    at("blobs.written", () => {
      writeFileSync(join(root, "notes.md"), "staged by the user\n");
      git(root, env, "add", "notes.md");
    });
    const receipt = await publish(backend, new Map([[s.meta, Buffer.from("two")]]));
    expect(receipt.indexSynced).toBe(true);
    expect(git(root, env, "diff", "--cached", "--name-only")).toBe("notes.md\n");
    expect(git(root, env, "show", ":notes.md")).toBe("staged by the user\n");
    expect(git(root, env, "show", `${receipt.pointer.revision}:notes.md`)).toBe("one\n");
    expect(git(root, env, "status", "--porcelain")).toBe("M  notes.md\n");
    // the staged entry is what the user's commit takes, on top of the cohort
    git(root, env, "commit", "-q", "-m", "user");
    expect(committed(root, env, "HEAD", s.meta).toString()).toBe("two");
    await expect(backend.loadCurrent(paths)).resolves.toBeTruthy();
  });

  it("a git commit -a after the ref moved is refused by index.lock and cannot revert the cohort", async () => {
    const { root, env, backend } = await repo();
    writeFileSync(join(root, "notes.md"), "one\n");
    await publish(backend, cohort(1));
    let raced: ReturnType<typeof run> | undefined;
    at("ref.unlocked", () => {
      writeFileSync(join(root, "notes.md"), "user edit\n");
      raced = run(root, env, "commit", "-q", "-a", "-m", "user");
    });
    const second = cohort(2);
    const receipt = await publish(backend, second);
    expect(raced?.status, raced?.stderr).not.toBe(0);
    expect(raced?.stderr).toMatch(/index\.lock/);
    expect(git(root, env, "rev-parse", "HEAD").trim()).toBe(receipt.pointer.revision);
    // the user's commit, run again, lands on top of the cohort and keeps it
    git(root, env, "commit", "-q", "-a", "-m", "user");
    expect(git(root, env, "rev-parse", "HEAD~1").trim()).toBe(receipt.pointer.revision);
    for (const [path, bytes] of second) expect(committed(root, env, "HEAD", path), path).toEqual(bytes);
    expect(git(root, env, "show", "HEAD:notes.md")).toBe("user edit\n");
    await expect(backend.loadCurrent(paths)).resolves.toBeTruthy();
  });

  it("a writer ignoring index.lock that moves the ref in that window is named (ref-moved)", async () => {
    const { root, env, backend } = await repo();
    const first = await publish(backend, cohort(1));
    const branch = git(root, env, "symbolic-ref", "HEAD").trim();
    at("rename", () => git(root, env, "update-ref", branch, first.pointer.revision));
    const error = await publish(backend, cohort(2)).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "ref-moved", message: expect.stringContaining("Nothing was lost") });
    expect(existsSync(backend.lockPath)).toBe(false);
    expect(existsSync(join(root, ".git", "index.lock"))).toBe(false);
    const advice = /\((git -C \S+ commit -m "state-flow: accepted cohort")\)/.exec((error as Error).message)![1]!;
    expect(spawnSync("sh", ["-c", advice], { env, encoding: "utf8" }).status).toBe(0);
    const current = await backend.loadCurrent(paths);
    for (const [path, bytes] of cohort(2)) expect(current.files.get(path), path).toEqual(bytes);
    expect(git(root, env, "status", "--porcelain")).toBe("");
  });

  it("refuses (index-locked) while git commit -a waits in its editor; the next commit keeps the cohort", async () => {
    const { root, env, backend, home } = await repo();
    writeFileSync(join(root, "notes.md"), "one\n");
    const first = await publish(backend, cohort(1));
    writeFileSync(join(root, "notes.md"), "user edit\n");
    const go = join(home, "editor-may-finish");
    const editor = join(home, "editor.sh");
    writeFileSync(editor, `#!/bin/sh\nwhile [ ! -e "${go}" ]; do sleep 0.02; done\necho "user commit" > "$1"\n`, {
      mode: 0o755,
    });
    const user = spawn("git", ["commit", "-a", "-q"], { cwd: root, env: { ...env, GIT_EDITOR: editor } });
    const exited = new Promise<number | null>((done) => user.on("close", done));
    while (!existsSync(join(root, ".git", "index.lock"))) await new Promise((done) => setTimeout(done, 10));
    const error = await publish(backend, cohort(2)).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "index-locked", file: join(root, ".git", "index.lock") });
    expect((error as Error).message).toMatch(/published nothing.*Finish or abort that git command, then retry/s);
    expect(git(root, env, "rev-parse", "HEAD").trim()).toBe(first.pointer.revision);
    expect(readFileSync(join(root, s.meta))).toEqual(cohort(1).get(s.meta));
    writeFileSync(go, "");
    expect(await exited).toBe(0); // the user's commit is not destroyed
    expect(git(root, env, "log", "-1", "--format=%s")).toBe("user commit\n");
    const receipt = await publish(backend, cohort(2)); // "then retry"
    expect(receipt.indexSynced).toBe(true);
    git(root, env, "commit", "-q", "-a", "--allow-empty", "-m", "next");
    for (const [path, bytes] of cohort(2)) expect(committed(root, env, "HEAD", path), path).toEqual(bytes);
    expect(git(root, env, "show", "HEAD:notes.md")).toBe("user edit\n");
  });

  it("a stale index.lock is refused until removed as told; a dead State Flow stamp is removed", async () => {
    const { root, backend } = await repo();
    await publish(backend, cohort(1));
    const lock = join(root, ".git", "index.lock");
    writeFileSync(lock, "");
    const error = await publish(backend, cohort(2)).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "index-locked" });
    const remedy = /If no git process is running in \S+, remove (\S+) and retry/.exec((error as Error).message);
    expect(remedy?.[1]).toBe(lock);
    rmSync(remedy![1]!);
    await publish(backend, cohort(2));
    // A stamp of a State Flow process of this host that no longer runs is provably a leftover.
    writeFileSync(
      lock,
      `state-flow index.lock pid=${deadPid()} host=${(await import("node:os")).hostname()} token=00\n`,
    );
    await publish(backend, cohort(3));
    expect(existsSync(lock)).toBe(false);
  });
});

describe("what the refusals say works", () => {
  it("worktree-diverged for a store file HEAD does not have names the command that removes it", async () => {
    const { root, env, backend } = await repo();
    await publish(backend, new Map([[s.meta, Buffer.from("one")]]));
    writeFileSync(join(root, s.config!), "written by hand");
    git(root, env, "add", "--", s.config!);
    const error = await backend.loadCurrent(paths).catch((e: Error) => e);
    expect(error).toMatchObject({ code: "worktree-diverged", file: s.config });
    const advice = /remove it with (git .*?), or commit/.exec((error as Error).message)![1]!;
    expect(spawnSync("sh", ["-c", advice], { env, encoding: "utf8" }).status).toBe(0);
    await expect(backend.loadCurrent(paths)).resolves.toBeTruthy();
    expect(git(root, env, "status", "--porcelain")).toBe("");
  });
});

describe("git's own gc beside a publication", () => {
  it("an old unreachable blob the cohort reuses is freshened, so a concurrent prune keeps it", async () => {
    const { root, env, backend } = await repo();
    await publish(backend, cohort(1));
    const bytes = Buffer.from('{"reused":true}\n');
    const written = spawnSync("git", ["hash-object", "-w", "--stdin"], {
      cwd: root,
      env,
      input: bytes,
      encoding: "utf8",
    });
    const blob = written.stdout.trim();
    expect(blob).toBe(gitObjectId("blob", bytes));
    const loose = join(root, ".git", "objects", blob.slice(0, 2), blob.slice(2));
    const weeksAgo = Date.now() / 1000 - 21 * 24 * 3600;
    utimesSync(loose, weeksAgo, weeksAgo);
    at("blobs.written", () => git(root, env, "prune", "--expire=2.weeks.ago"));
    const receipt = await publish(backend, new Map([[s.meta, bytes]]));
    expect(git(root, env, "rev-parse", `${receipt.pointer.revision}:${s.meta}`).trim()).toBe(blob);
    git(root, env, "fsck", "--strict", "--no-progress");
    expect(committed(root, env, "HEAD", s.meta)).toEqual(bytes);
  });

  it("an object directory that cannot be created is a named git-failed error, and nothing is published", async () => {
    const { root, env, backend } = await repo();
    const bytes = Buffer.from("blocked");
    writeFileSync(join(root, ".git", "objects", gitObjectId("blob", bytes).slice(0, 2)), "not a directory");
    const error = await publish(backend, new Map([[s.meta, bytes]])).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "StoreError", code: "git-failed" });
    expect(run(root, env, "rev-parse", "-q", "--verify", "HEAD").status).not.toBe(0);
    expect(existsSync(backend.lockPath)).toBe(false);
    expect(existsSync(join(root, ".git", "index.lock"))).toBe(false);
  });
});

describe("leftovers of killed publications", () => {
  it("removes pid-stamped leftovers whose owner is gone and keeps those of a running process", async () => {
    const { root, backend } = await repo();
    await publish(backend, cohort(1));
    const dead = deadPid();
    const gitDir = join(root, ".git");
    const session = join(root, s.meta, "..");
    const leftovers = [
      join(gitDir, `state-flow-index.${dead}.0123456789ab`),
      join(gitDir, `state-flow-index.${dead}.0123456789ab.lock`),
      join(gitDir, `.state-flow-publication.journal.${dead}.tmp`),
      join(root, `.checkpoint.json.sf-${dead}-0123456789ab.tmp`),
      join(session, `.meta.json.sf-${dead}-0123456789ab.tmp`),
    ];
    const running = [join(gitDir, "state-flow-index.1.0123456789ab"), join(session, ".meta.json.sf-1-0a.tmp")];
    for (const path of [...leftovers, ...running]) writeFileSync(path, "x");
    await publish(backend, cohort(2));
    expect(leftovers.filter((path) => existsSync(path))).toEqual([]);
    expect(running.filter((path) => existsSync(path))).toEqual(running);
    expect(readdirSync(gitDir).filter((name) => name.startsWith("state-flow-index."))).toEqual([
      "state-flow-index.1.0123456789ab",
    ]);
  });
});
