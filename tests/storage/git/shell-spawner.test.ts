import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { ShellSpawner, helperCanRun, shellQuote, type SpawnRequest } from "../../../storage/git/shell-spawner.ts";
import { TempDirs } from "../../support/store-fixtures.ts";

const temps = new TempDirs();
afterEach(() => temps.cleanup());

const PRINTF = "/usr/bin/printf";
const SH = "/bin/sh";
const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", STATE_FLOW_SPAWNER_TEST: "base" };

function printArgs(spawner: ShellSpawner, args: readonly string[], cwd = "/"): Promise<string[]> {
  return spawner.run({ binary: PRINTF, args: ["%s\\0", ...args], cwd }).then((r) => {
    expect(r.code).toBe(0);
    return r.stdout.toString("utf8").split("\0").slice(0, -1);
  });
}

const sh = (script: string, extra: Partial<SpawnRequest> = {}): SpawnRequest => ({
  binary: SH,
  args: ["-c", script],
  cwd: "/",
  ...extra,
});

describe("shell spawner", () => {
  // (printf repeats its format for no argument at all, hence at least one.)
  it("passes every argument byte for byte, whatever quotes, newlines or shell syntax it holds", async () => {
    const spawner = ShellSpawner.create(env);
    const tricky = ["", "'", "'\\''", '"$HOME"', "`id`", "$(id)", "a\nb", "-n", "*", "; exit 3", "é ☃ \t"];
    expect(await printArgs(spawner, tricky)).toEqual(tricky);
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.string({ unit: "binary" }).filter((s) => !s.includes("\0")),
          { minLength: 1, maxLength: 6 },
        ),
        async (args) => {
          expect(await printArgs(spawner, args)).toEqual(args);
        },
      ),
      { numRuns: 60 },
    );
    spawner.close();
  });

  it("runs in the request's directory with the base environment plus the request's variables", async () => {
    const spawner = ShellSpawner.create(env);
    const dir = temps.make("sf-spawner-");
    const result = await spawner.run(
      sh('printf "%s|%s|%s" "$(pwd -P)" "$STATE_FLOW_SPAWNER_TEST" "$EXTRA"', { cwd: dir, env: { EXTRA: "it's x" } }),
    );
    expect(result.stdout.toString("utf8")).toBe(`${spawnSync("realpath", [dir]).stdout.toString().trim()}|base|it's x`);
    // the variable was the command's only: the next command does not see it
    expect((await spawner.run(sh('printf "%s" "${EXTRA-unset}"'))).stdout.toString()).toBe("unset");
    spawner.close();
  });

  it("passes stdin and unbounded binary stdout and stderr unchanged, and reports the exit status", async () => {
    const spawner = ShellSpawner.create(env);
    const big = Buffer.alloc(3 * 1024 * 1024 + 5, 0xfe);
    const echoed = await spawner.run(sh("cat; printf oops >&2; exit 7", { input: big }));
    expect(echoed.code).toBe(7);
    expect(echoed.stdout.equals(big)).toBe(true);
    expect(echoed.stderr.toString()).toBe("oops");
    const killed = await spawner.run(sh("kill -9 $$"));
    expect(killed.code).toBe(128 + 9);
    spawner.close();
  });

  it("reports a command that cannot start (missing directory or executable) as code -1", async () => {
    const spawner = ShellSpawner.create(env);
    const dir = temps.make("sf-spawner-");
    const noDir = await spawner.run({ binary: PRINTF, args: ["x"], cwd: join(dir, "gone") });
    expect([noDir.code, noDir.stderr.toString()]).toEqual([-1, "cannot enter the working directory"]);
    const noExe = await spawner.run({ binary: join(dir, "no-such-binary"), args: [], cwd: dir });
    expect([noExe.code, noExe.stderr.toString()]).toEqual([-1, "the executable is missing or not executable"]);
    expect((await printArgs(spawner, ["still works"])).at(0)).toBe("still works");
    spawner.close();
  });

  it("runs concurrent commands in helpers of their own, and reuses idle ones", async () => {
    const spawner = ShellSpawner.create(env);
    // Each command waits until all four have started: run one after another, they would never finish.
    const dir = temps.make("sf-spawner-");
    const script = (k: number) => `: > ${k}; while [ "$(ls | wc -l)" -lt 4 ]; do sleep 0.01; done; printf ${k}`;
    const results = await Promise.all([0, 1, 2, 3].map((k) => spawner.run(sh(script(k), { cwd: dir }))));
    expect(results.map((r) => r.stdout.toString())).toEqual(["0", "1", "2", "3"]);
    expect(spawner.size).toBe(4);
    await printArgs(spawner, ["again"]);
    expect(spawner.size).toBe(4);
    spawner.close();
  });

  it("rejects the command of a helper that died, and starts a new helper for the next", async () => {
    const spawner = ShellSpawner.create(env);
    const error = await spawner.run(sh("kill -9 $PPID; sleep 5")).catch((e: unknown) => e);
    expect(String(error)).toMatch(/the helper shell ended \(exit SIGKILL\)/);
    expect(spawner.size).toBe(0);
    expect(await printArgs(spawner, ["after"])).toEqual(["after"]);
    spawner.close();
  });

  it("replaces a helper whose folder was removed: the command fails by name, the next runs", async () => {
    const tempRoot = temps.make("sf-spawner-root-");
    const spawner = ShellSpawner.create(env, { tempRoot });
    await printArgs(spawner, ["first"]);
    for (const name of readdirSync(tempRoot)) rmSync(join(tempRoot, name), { recursive: true, force: true });
    const error = await spawner.run({ binary: PRINTF, args: ["x"], cwd: "/" }).catch((e: unknown) => e);
    expect(String(error)).toMatch(/the helper shell's folder .*state-flow-spawn-.* failed: ENOENT/);
    const withInput = await spawner.run(sh("cat", { input: "in" })).catch((e: unknown) => e);
    expect(withInput).toMatchObject({ code: 0 }); // a new helper, a new folder
    expect(await printArgs(spawner, ["again"])).toEqual(["again"]);
    spawner.close();
  });

  it("ends idle helpers after a while and removes their directory", async () => {
    const spawner = ShellSpawner.create(env, { idleMs: 50 });
    const before = new Set(readdirSync(tmpdir()).filter((n) => n.startsWith("state-flow-spawn-")));
    await printArgs(spawner, ["x"]);
    const mine = readdirSync(tmpdir()).filter((n) => n.startsWith("state-flow-spawn-") && !before.has(n));
    expect(mine).toHaveLength(1);
    while (spawner.size > 0) await new Promise((r) => setTimeout(r, 20));
    expect(existsSync(join(tmpdir(), mine[0]!))).toBe(false);
  });

  it("never keeps its process alive, and its helpers clean up after it even when it is killed", async () => {
    const module = JSON.stringify(new URL("../../../storage/git/shell-spawner.ts", import.meta.url).href);
    const script =
      `const { ShellSpawner } = await import(${module});` +
      `const request = { binary: "${PRINTF}", args: ["done"], cwd: "/" };` +
      `const r = await ShellSpawner.forEnvironment(process.env).run(request);` +
      `process.stdout.write(r.stdout);`;
    const run = (extra: string) => {
      const tmp = temps.make("sf-spawner-tmp-");
      const child = spawnSync(
        process.execPath,
        ["--experimental-strip-types", "--input-type=module", "-e", script + extra],
        { encoding: "utf8", timeout: 20_000, env: { ...process.env, TMPDIR: tmp } },
      );
      return { tmp, child };
    };
    const calm = run("");
    expect([calm.child.signal, calm.child.status, calm.child.stdout]).toEqual([null, 0, "done"]);
    const killed = run(`process.kill(process.pid, "SIGKILL");`);
    expect([killed.child.signal, killed.child.stdout]).toEqual(["SIGKILL", "done"]);
    // the helpers see their stdin close and remove their directories (asynchronously: they are other
    // processes; waited for without a bound of its own, the test's timeout ends a helper that never does)
    for (const { tmp } of [calm, killed]) {
      while (readdirSync(tmp).length > 0) await new Promise((r) => setTimeout(r, 25));
      expect(readdirSync(tmp)).toEqual([]);
    }
  });

  it("shares one spawner per base environment and declines requests it could not run exactly", () => {
    expect(ShellSpawner.forEnvironment({ A: "1", B: "2" })).toBe(ShellSpawner.forEnvironment({ B: "2", A: "1" }));
    expect(ShellSpawner.forEnvironment({ A: "1" })).not.toBe(ShellSpawner.forEnvironment({ A: "2" }));
    const ok: SpawnRequest = { binary: PRINTF, args: ["a"], cwd: "/", env: { GIT_INDEX_FILE: "/x" } };
    expect(helperCanRun(ok)).toBe(true);
    expect(helperCanRun({ ...ok, env: { "NOT-AN-IDENTIFIER": "x" } })).toBe(false);
    expect(helperCanRun({ ...ok, binary: "printf" })).toBe(false);
    expect(helperCanRun({ ...ok, cwd: "relative" })).toBe(false);
    expect(helperCanRun({ ...ok, args: ["a\0b"] })).toBe(false);
    expect(shellQuote("it's")).toBe(`'it'\\''s'`);
  });
});
