// Spec 001 "Existing stores and migration": production has no predecessor writers; the fixtures
// that write predecessor formats are test-only. The predecessor formats are a scope's current-state
// `state.json` (with its explanatory journal), the pre-0.4 layout's SHA-256-suffixed cwd and session
// directories, Pi entries carrying copied state, and `contract.compiled_skills`. Production only
// reads them and migrates them away, one way. Two checks: every production writer a session reaches
// (start, transitions in every scope, the answer, stop, restart, restore, status, adoption into
// Git) runs in a real Pi session and leaves none of them anywhere it wrote; and no production module
// can reach a fixture writer, nor spells the predecessor's file name outside the migration readers.
import { execFileSync } from "node:child_process";
import { lstatSync, readFileSync, readdirSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { call, harnessFactory, say, type PiHarness } from "./support/pi-harness.ts";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const harness = harnessFactory();

/** Every path under `dir` (relative), `.git` left out: Git's own files are checked through git. */
function walk(dir: string, prefix = ""): string[] {
  let names: string[];
  try {
    names = readdirSync(join(dir, prefix));
  } catch {
    return [];
  }
  return names.flatMap((name) => {
    if (name === ".git") return [];
    const rel = prefix === "" ? name : `${prefix}/${name}`;
    return lstatSync(join(dir, rel)).isDirectory() ? [`${rel}/`, ...walk(dir, rel)] : [rel];
  });
}

/** What in `paths` is a predecessor format: a state.json (or its kept old bytes), a suffixed directory. */
function predecessorPaths(paths: readonly string[]): string[] {
  return paths.filter((path) => {
    const name = path.replace(/\/$/, "").split("/").at(-1)!;
    return /^state\.json($|\.pre-migration)/.test(name) || /-[0-9a-f]{64}$/.test(name);
  });
}

/** The state-flow entries on the session's branch that are not in the current form. */
function olderEntries(h: PiHarness): unknown[] {
  return h.session.sessionManager
    .getEntries()
    .filter((e) => e.type === "custom" && e.customType === "state-flow")
    .map((e) => (e as { data: Record<string, unknown> }).data)
    .filter((data) => {
      const keys = Object.keys(data).sort().join(",");
      return !(keys === "disabled" || keys === "revision" || keys === "boundary,revision");
    });
}

describe.each([
  ["a Git store", true],
  ["a file-only store adopted into Git", false],
] as const)("every production writer a session reaches, on %s", (_, git) => {
  it("leaves no predecessor format in the store, its Git history, the agent directory or the branch", async () => {
    const h = await harness({ git, sessionKind: "file", config: { remotePublication: "off" } });
    await h.command("/state-flow-start");
    h.script(
      call("patch_state", {
        global: { contract: { tone: "terse" } },
        cwd: { contract: { build: "npm test" }, working: { next: "ship" } },
        session: { working: { step: 1 } },
        final: true,
      }),
      say("Noted."),
    );
    await h.prompt("Remember all of this");
    await h.command("/state-flow-stop");
    h.script(say("passive"));
    await h.prompt("Off for a moment");
    await h.command("/state-flow-start");
    await h.session.reload();
    await h.command("/state-flow-status");
    if (!git) {
      h.env.PATH = process.env.PATH; // git installed: the next start adopts the store into Git
      await h.command("/state-flow-start");
      expect(h.lastNotice()!.message).toMatch(/adopted this branch's file-only store into Git/);
    }
    h.script(call("patch_state", { session: { working: { step: 2 } }, final: true }), say("Done."));
    await h.prompt("One more");
    expect(h.accessor.read(0, "session").state.working).toEqual({ step: 2 });

    expect(predecessorPaths(walk(h.storeRoot))).toEqual([]);
    expect(predecessorPaths(walk(h.agentDir))).toEqual([]);
    const history = execFileSync("git", ["log", "--all", "--name-only", "--format="], {
      cwd: h.storeRoot,
      env: h.env,
      encoding: "utf8",
    });
    expect(history.trim()).not.toBe("");
    expect(predecessorPaths(history.split("\n").filter(Boolean))).toEqual([]);
    const stored = walk(h.storeRoot).filter((p) => p.endsWith(".json") || p.endsWith(".jsonl"));
    for (const path of stored)
      expect(readFileSync(join(h.storeRoot, path), "utf8"), path).not.toContain("compiled_skills");
    expect(olderEntries(h)).toEqual([]);
  });
});

describe("what counts as a predecessor path", () => {
  it("names a state.json, its kept old bytes and a suffixed directory, and nothing current", () => {
    const suffixed = `--work-project---${"ab".repeat(32)}/`;
    const found = ["state.json", "--work-project--/state.json.pre-migration.1", suffixed, `${suffixed}meta.json`];
    const current = ["checkpoint.json", "patches.jsonl", "meta.json", "--work-project--/s1/config.json"];
    expect(predecessorPaths([...found, ...current])).toEqual(found.slice(0, 3));
  });
});

describe("the predecessor's writers are test fixtures", () => {
  const production = execFileSync("git", ["ls-files", "*.ts"], { cwd: ROOT, encoding: "utf8" })
    .split("\n")
    .filter((file) => file !== "" && !file.startsWith("tests/") && !file.startsWith("compat/"));

  it("no production module imports from tests/, and only the migration readers name state.json", () => {
    expect(production).toContain("storage/legacy-migration.ts");
    const fromTests: string[] = [];
    const naming: string[] = [];
    for (const file of production) {
      const text = readFileSync(join(ROOT, file), "utf8");
      for (const [, specifier] of text.matchAll(/(?:from\s+|import\()"(\.[^"]+)"/g)) {
        const target = relative(ROOT, resolve(ROOT, dirname(file), specifier!));
        if (target.startsWith("tests/")) fromTests.push(`${file} → ${target}`);
      }
      if (/\bLEGACY_STATE_FILE\b/.test(text)) naming.push(file);
    }
    expect(fromTests).toEqual([]);
    // The predecessor's file name is one constant: the migration plans from it and restores its exact
    // old bytes after a failed migration; the revision reader reads a predecessor's snapshot with it.
    expect(naming.sort()).toEqual(["storage/legacy-migration.ts", "storage/predecessor-snapshot.ts"]);
  });
});
