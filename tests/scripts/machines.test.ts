import { spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const run = (...args: string[]) =>
  spawnSync(
    process.execPath,
    ["--experimental-strip-types", "--disable-warning=ExperimentalWarning", join(repo, "scripts/machines.ts"), ...args],
    { encoding: "utf8", timeout: 30_000 },
  );

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
    expect(result.stdout).toContain("diagrams and transition tables are up to date");
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

  it("--check names a doc whose transition table was edited by hand; a write run repairs it", () => {
    temp = mkdtempSync(join(tmpdir(), "sf-machines-"));
    cpSync(join(repo, "docs"), join(temp, "docs"), { recursive: true });
    const doc = join(temp, "docs/state-machines.md");
    const original = readFileSync(doc, "utf8");
    const row = "| `stopping` | `xstate.done.actor.stop` | — | ";
    const edited = original.replace(`${row}\`passive\` |`, `${row}\`off\` |`);
    expect(edited, "the episode table has the stopping row").not.toBe(original);
    writeFileSync(doc, edited);
    const drift = run("--check", "--root", temp);
    expect(drift.status).toBe(1);
    expect(drift.stderr).toContain("docs/state-machines.md");
    expect(drift.stderr).not.toContain(".mmd");
    expect(run("--root", temp).status).toBe(0);
    expect(readFileSync(doc, "utf8")).toBe(original);
    expect(run("--check", "--root", temp).status).toBe(0);
  });

  it("a doc without a machine's table markers fails with the named error, writing nothing", () => {
    temp = mkdtempSync(join(tmpdir(), "sf-machines-"));
    cpSync(join(repo, "docs"), join(temp, "docs"), { recursive: true });
    const doc = join(temp, "docs/state-machines.md");
    const original = readFileSync(doc, "utf8");
    const stripped = original.replace(/<!-- machine:barrier:table:end -->\n/, "");
    expect(stripped).not.toBe(original);
    writeFileSync(doc, stripped);
    for (const args of [["--check"], []]) {
      const result = run(...args, "--root", temp);
      expect(result.status).toBe(1);
      expect(result.stderr).toContain('transition-table markers for machine "barrier"');
      expect(readFileSync(doc, "utf8")).toBe(stripped);
    }
  });
});
