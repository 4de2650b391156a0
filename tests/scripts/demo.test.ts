import { spawnSync } from "node:child_process";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { PI_VERSION, piNodeArgs } from "../support/pi-version.ts";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const run = (...args: string[]) =>
  spawnSync(
    process.execPath,
    [
      ...piNodeArgs,
      "--experimental-strip-types",
      "--disable-warning=ExperimentalWarning",
      join(repo, "scripts/demo.ts"),
      ...args,
    ],
    {
      encoding: "utf8",
      timeout: 60_000,
      env: { ...process.env, PI_CODING_AGENT_DIR: "" },
    },
  );

describe("npm run demo (the README's main command)", () => {
  it("runs offline end to end and removes its temp dir", () => {
    const result = run();
    expect(result.stderr).not.toMatch(/demo failed/);
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(/done in [\d.]+ s — temp dir removed/);
    expect(result.stdout).toContain("/state-flow-status");
    expect(result.stdout, "the demo runs on the Pi this test run selected").toContain(
      `a real Pi ${PI_VERSION} AgentSession`,
    );
  }, 60_000);

  it("refuses unknown arguments with usage", () => {
    const result = run("--bogus");
    expect(result.status).toBe(2);
    expect(result.stderr).toContain("usage: npm run demo [-- --keep]");
  });
});
