import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  GitCommandError,
  GitRunner,
  findGitExecutable,
  type GitProcessCounter,
} from "../../../storage/git/git-runner.ts";
import { TempDirs, git, gitTestEnv } from "../../support/store-fixtures.ts";

const temps = new TempDirs();
afterEach(() => temps.cleanup());
const GIT = findGitExecutable()!;

function runner(counter: GitProcessCounter = { count: 0 }, spawn: "shell" | "direct" = "shell") {
  const dir = temps.make("sf-runner-");
  const cfg = join(dir, "gitconfig");
  writeFileSync(cfg, "");
  const env = { ...gitTestEnv(cfg), GIT_DIR: "/elsewhere", GIT_INDEX_FILE: "/elsewhere/index" };
  git(dir, gitTestEnv(cfg), "init", "-q");
  return { dir, env, counter, runner: new GitRunner({ cwd: dir, env, binary: GIT, counter, spawn }) };
}

describe("git runner", () => {
  it("never inherits repository-location variables", () => {
    const env = { PATH: "/bin", GIT_DIR: "/x", git_work_tree: "/y", GIT_AUTHOR_NAME: "a" };
    const clean = new GitRunner({ cwd: "/", env, binary: GIT });
    expect(Object.keys(env).map((name) => clean.envValue(name))).toEqual(["/bin", undefined, undefined, "a"]);
    const r = new GitRunner({ cwd: "/", env: { GIT_DIR: "/x", GIT_AUTHOR_DATE: "1700000000 +0000" }, binary: GIT });
    expect([r.envValue("GIT_AUTHOR_DATE"), r.envValue("GIT_DIR")]).toEqual(["1700000000 +0000", undefined]);
  });

  it.each(["shell", "direct"] as const)(
    "spawns git (%s): stdin, unbounded binary stdout, counted and timed processes",
    async (spawn) => {
      const counter: GitProcessCounter = { count: 0, log: [] };
      const { runner: r } = runner(counter, spawn);
      const via = spawn === "shell" ? "shell" : "spawn";
      const big = Buffer.alloc(3 * 1024 * 1024 + 5, 0xfe); // not UTF-8, > 1 MiB
      const id = (await r.execText(["hash-object", "-w", "--stdin"], { input: big })).trim();
      expect(id).toMatch(/^[0-9a-f]{40}$/);
      const out = await r.exec(["cat-file", "blob", id]);
      expect(out.length).toBe(big.length);
      expect(out.equals(big)).toBe(true);
      // a command that prints nothing resolves with empty output (no simple-git 50 ms wait involved)
      expect(
        (
          await r.exec([
            "update-ref",
            "refs/heads/x",
            (await r.execText(["commit-tree", (await r.execText(["write-tree"])).trim(), "-m", "m"])).trim(),
          ])
        ).length,
      ).toBe(0);
      expect(counter.count).toBe(5);
      expect(counter.log?.map((e) => [e.args[0], e.via])).toEqual([
        ["hash-object", "spawn"], // a spawner's first command: a helper would cost a spawn more
        ["cat-file", via],
        ["write-tree", via],
        ["commit-tree", via],
        ["update-ref", via],
      ]);
      expect(counter.log?.every((e) => e.ms > 0)).toBe(true);
      // the environment's GIT_DIR was dropped: the commands ran in the cwd repository
      expect(await r.run(["rev-parse", "--verify", "refs/heads/x"])).toMatch(/^[0-9a-f]{40}\n$/);
      expect(counter.log?.at(-1)?.via).toBe("simple-git");
    },
  );

  it.each(["shell", "direct"] as const)(
    "turns non-zero exits and spawn failures (%s) into GitCommandError with exit code and stderr",
    async (spawn) => {
      const { runner: r, dir, env } = runner(undefined, spawn);
      const error = await r.exec(["cat-file", "-p", "1".repeat(40)]).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(GitCommandError);
      expect(error).toMatchObject({ exitCode: 128, args: ["cat-file", "-p", "1".repeat(40)] });
      expect((error as GitCommandError).stderr).toMatch(/Not a valid object name|bad object/i);
      // update-ref compare-and-swap failure is an error, with git's reason
      const cas = await r.exec(["update-ref", "refs/heads/y", "2".repeat(40), "3".repeat(40)]).catch((e: unknown) => e);
      expect(cas).toBeInstanceOf(GitCommandError);
      // a binary that cannot be spawned
      const missing = new GitRunner({ cwd: dir, env, binary: join(dir, "no-such-git"), spawn });
      await expect(missing.exec(["--version"])).rejects.toMatchObject({ name: "GitCommandError", exitCode: -1 });
      // a process that exits non-zero after ignoring its stdin is still reported by exit status (no EPIPE crash)
      const fake = join(dir, "fake-git");
      writeFileSync(fake, "#!/bin/sh\necho nope >&2\nexit 7\n", { mode: 0o755 });
      const failing = new GitRunner({ cwd: dir, env, binary: fake, spawn });
      await expect(failing.exec(["x"], { input: Buffer.alloc(4 * 1024 * 1024) })).rejects.toMatchObject({
        exitCode: 7,
        stderr: "nope\n",
      });
      await expect(failing.run(["x"])).rejects.toMatchObject({ name: "GitCommandError", exitCode: 7 });
    },
  );

  it("starts git from a helper shell from the second command on, unless STATE_FLOW_GIT_SPAWN=direct", async () => {
    const counter: GitProcessCounter = { count: 0, log: [] };
    const { dir, env } = runner();
    await new GitRunner({ cwd: dir, env, binary: GIT, counter }).exec(["--version"]);
    await new GitRunner({ cwd: dir, env, binary: GIT, counter }).exec(["--version"]);
    const direct = { ...env, STATE_FLOW_GIT_SPAWN: "direct" };
    await new GitRunner({ cwd: dir, env: direct, binary: GIT, counter }).exec(["--version"]);
    // a per-call variable that is not a shell identifier cannot pass through the helper: spawned directly
    await new GitRunner({ cwd: dir, env, binary: GIT, counter }).exec(["--version"], { env: { "A-B": "x" } });
    expect(counter.log?.map((e) => e.via)).toEqual(["spawn", "shell", "spawn", "spawn"]);
  });
});
