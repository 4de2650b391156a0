import { spawnSync } from "node:child_process";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { KILL_POINTS, killPoint, observeKillPoints } from "../../../storage/fs/crash-points.ts";

const module = resolve(dirname(fileURLToPath(import.meta.url)), "../../../storage/fs/crash-points.ts");

/** Reaches `point` three times in a fresh process armed with `spec`; prints each arrival it survived. */
function arrive(spec: string | undefined, point: string) {
  const script =
    `const { killPoint } = await import(${JSON.stringify(module)}); ` +
    `for (let i = 1; i <= 3; i++) { killPoint(${JSON.stringify(point)}); console.log("survived " + i); }`;
  return spawnSync(
    process.execPath,
    ["--experimental-strip-types", "--disable-warning=ExperimentalWarning", "--input-type=module", "-e", script],
    {
      env: { ...process.env, ...(spec ? { STATE_FLOW_KILL_AT: spec } : { STATE_FLOW_KILL_AT: "" }) },
      encoding: "utf8",
    },
  );
}

describe("crash points", () => {
  it("kill the process with SIGKILL at exactly the n-th arrival at the named point", () => {
    const run = arrive("rename#2", "rename");
    expect(run.signal).toBe("SIGKILL");
    expect(run.stdout).toBe("survived 1\n");
  });

  it("do nothing unarmed or armed elsewhere", () => {
    expect(arrive(undefined, "rename").stdout).toBe("survived 1\nsurvived 2\nsurvived 3\n");
    expect(arrive("ref.moved#1", "rename").status).toBe(0);
  });

  it("can be armed after the process started; arrivals count from the arming", () => {
    const script =
      `const { killPoint } = await import(${JSON.stringify(module)}); ` +
      `killPoint("rename"); console.log("unarmed"); process.env.STATE_FLOW_KILL_AT = "rename#2"; ` +
      `for (let i = 1; i <= 3; i++) { killPoint("rename"); console.log("survived " + i); }`;
    const run = spawnSync(
      process.execPath,
      ["--experimental-strip-types", "--disable-warning=ExperimentalWarning", "--input-type=module", "-e", script],
      { env: { ...process.env, STATE_FLOW_KILL_AT: "" }, encoding: "utf8" },
    );
    expect(run.signal).toBe("SIGKILL");
    expect(run.stdout).toBe("unarmed\nsurvived 1\n");
  });

  it("refuse a misspelt target by name, listing the points", () => {
    const run = arrive("renmae#1", "rename");
    expect(run.status).not.toBe(0);
    expect(run.stderr).toMatch(/STATE_FLOW_KILL_AT="renmae#1" must be <point>#<n> with a point of lock\.acquired/);
  });

  it("name every point once", () => {
    expect(new Set(KILL_POINTS).size).toBe(KILL_POINTS.length);
  });

  it("let a test observe every arrival in this process, before any kill, until it stops observing", () => {
    const seen: string[] = [];
    observeKillPoints((point) => seen.push(point));
    killPoint("rename");
    killPoint("ref.moved");
    observeKillPoints(null);
    killPoint("rename");
    expect(seen).toEqual(["rename", "ref.moved"]);
  });
});
