// A new store's repository appears whole or not at all: several OS processes that open one new
// store at the same moment (several Pi sessions started at once) all open it, and none is told
// "not a git repository" because it looked while another was still running `git init`.
import { spawn } from "node:child_process";
import { existsSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { initRepositoryAtomically } from "../../../storage/git/git-init.ts";
import { GitRunner } from "../../../storage/git/git-runner.ts";
import { TempDirs, git, gitTestEnv } from "../../support/store-fixtures.ts";

const BACKEND = resolve(dirname(fileURLToPath(import.meta.url)), "../../../storage/git/git-backend.ts");
const temps = new TempDirs();
afterEach(() => temps.cleanup());

/** One OS process that waits until `at` (epoch ms), opens the store with init, and prints what happened. */
function opener(root: string, env: NodeJS.ProcessEnv, at: number): Promise<string> {
  const script =
    `const { openGitBackend } = await import(${JSON.stringify(BACKEND)});` +
    `await new Promise((go) => setTimeout(go, Math.max(0, ${at} - Date.now())));` +
    `const options = { root: ${JSON.stringify(root)}, binary: "git", generation: "g", init: true };` +
    `try { console.log((await openGitBackend(options)) ? "opened" : "none"); }` +
    ` catch (e) { console.log(String(e.message)); }`;
  const args = ["--experimental-strip-types", "--disable-warning=ExperimentalWarning", "--input-type=module", "-e"];
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [...args, script], { env, stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (out += chunk));
    child.on("error", fail);
    child.on("close", () => done(out.trim()));
  });
}

describe("initRepositoryAtomically", () => {
  it("six processes opening one new store at once all open the one repository", async () => {
    for (let round = 0; round < 3; round++) {
      const base = temps.make("sf-init-");
      const root = join(base, "state-flow");
      const env = gitTestEnv(join(base, "gitconfig"));
      // Staggered by a few milliseconds, so some look while another's init is under way.
      const at = Date.now() + 1_500;
      const said = await Promise.all(Array.from({ length: 6 }, (_, k) => opener(root, env, at + k * 3)));
      expect(said).toEqual(Array(6).fill("opened"));
      expect(git(root, env, "rev-parse", "--show-toplevel").trim()).toBe(root);
      expect(readdirSync(base).filter((name) => name.includes(".sf-init-"))).toEqual([]);
    }
  }, 60_000);

  it("keeps a repository another process made meanwhile, and leaves no scratch copy", async () => {
    const base = temps.make("sf-init-");
    const root = join(base, "state-flow");
    const env = gitTestEnv(join(base, "gitconfig"));
    const runner = new GitRunner({ cwd: root, env, binary: "git" });
    await initRepositoryAtomically(root, runner);
    writeFileSync(join(root, ".git", "description"), "the first one\n");
    await initRepositoryAtomically(root, runner);
    expect(git(root, env, "rev-parse", "--git-dir").trim()).toBe(".git");
    expect(existsSync(join(root, ".git", "HEAD"))).toBe(true);
    expect(readdirSync(base).filter((name) => name.includes(".sf-init-"))).toEqual([]);
    expect(git(root, env, "config", "--get", "core.bare").trim()).toBe("false");
    expect(readFileSync(join(root, ".git", "description"), "utf8")).toBe("the first one\n");
  });
});
