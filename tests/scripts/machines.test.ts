import { spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const run = (...args: string[]) =>
  spawnSync(process.execPath, ["--experimental-strip-types", "--disable-warning=ExperimentalWarning", join(repo, "scripts/machines.ts"), ...args], { encoding: "utf8", timeout: 30_000 });

let temp: string | undefined;
afterEach(() => {
  if (temp) rmSync(temp, { recursive: true, force: true });
  temp = undefined;
});

describe("npm run machines", () => {
  it("--check passes on the committed docs", () => {
    const result = run("--check");
    expect(result.stderr).toBe("");
    expect(result.status).toBe(0);
    expect(result.stdout).toContain("diagrams are up to date");
  });

  it("--check names a drifted diagram; a write run repairs it", () => {
    temp = mkdtempSync(join(tmpdir(), "sf-machines-"));
    cpSync(join(repo, "docs"), join(temp, "docs"), { recursive: true });
    const diagram = join(temp, "docs/machines/episode.mmd");
    writeFileSync(diagram, readFileSync(diagram, "utf8").replace("stopping", "stoping"));
    const drift = run("--check", "--root", temp);
    expect(drift.status).toBe(1);
    expect(drift.stderr).toContain("docs/machines/episode.mmd");
    const write = run("--root", temp);
    expect(write.status).toBe(0);
    expect(readFileSync(diagram, "utf8")).toBe(readFileSync(join(repo, "docs/machines/episode.mmd"), "utf8"));
    expect(run("--check", "--root", temp).status).toBe(0);
  });
});
