// 001 keeps one history: live files for the hot window, Git for the rest. There is no second event store,
// database, `.state-flow`, `scopes` or parallel history folder. After real sessions that fold past the hot
// window in all three scopes, stop and start again, the store's folder holds the documented files and
// nothing else (README "The store"), with Git and without.
import { readdirSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { cwdKey } from "../../../storage/layout.ts";
import { call, harnessFactory, say, type PiHarness } from "../../support/pi-harness.ts";

const harness = harnessFactory();

/** Every file and folder under `dir`, relative, "/"-separated, without descending into `skip`. */
function listing(dir: string, skip: string[] = []): string[] {
  const out: string[] = [];
  const walk = (at: string) => {
    for (const entry of readdirSync(at, { withFileTypes: true })) {
      const path = join(at, entry.name);
      const rel = relative(dir, path).split("\\").join("/");
      out.push(entry.isDirectory() ? `${rel}/` : rel);
      if (entry.isDirectory() && !skip.includes(rel)) walk(path);
    }
  };
  walk(dir);
  return out.sort();
}

/** Ten transitions touching every scope (the hot window holds seven), a stop and a start again. */
async function longHistory(h: PiHarness): Promise<void> {
  await h.command("/state-flow-start");
  for (let i = 0; i < 10; i++) {
    h.script(
      call("patch_state", {
        global: { working: { g: i } },
        cwd: { working: { c: i } },
        session: { working: { s: i } },
        final: true,
      }),
      say(`answer ${i}`),
    );
    await h.prompt(`step ${i}`);
  }
  await h.command("/state-flow-stop");
  await h.command("/state-flow-start");
}

function documented(h: PiHarness, git: boolean): string[] {
  const cwd = cwdKey(h.cwd);
  const session = listing(h.storeRoot).find((p) => p.startsWith(`${cwd}/`) && p.endsWith("/") && p !== `${cwd}/`)!;
  const files = ["checkpoint.json", "patches.jsonl", "meta.json"];
  return [
    ...(git ? [".git/"] : []),
    ...files,
    `${cwd}/`,
    ...files.map((f) => `${cwd}/${f}`),
    session,
    ...[...files, "config.json"].map((f) => `${session}${f}`),
  ].sort();
}

describe("the store's folder", () => {
  it.each([
    ["with Git", true],
    ["file-only", false],
  ] as const)("%s holds the documented files and no second history store", async (_, git) => {
    const h = await harness({ git });
    await longHistory(h);
    expect(h.accessor.read(0, "cwd").state.working, "history went past the hot window").toEqual({ c: 9 });
    const found = listing(h.storeRoot, [".git"]);
    expect(found).toEqual(documented(h, git));
    if (git) {
      // Git's own folder holds git's things, and State Flow's two documented records beside the repository:
      // the known-blobs cache of one revision and pending publication intents. No history copy.
      const inGit = readdirSync(join(h.storeRoot, ".git"));
      expect(inGit).toEqual(expect.arrayContaining(["HEAD", "objects", "refs", "state-flow"]));
      expect(inGit.filter((name) => /state-flow.|\.db$|sqlite|journal|history/i.test(name))).toEqual([]);
      const records = listing(join(h.storeRoot, ".git", "state-flow"));
      expect(records).toContain("known-blobs.json");
      expect(records.filter((p) => !/^(known-blobs\.json|pending\/|pending\/[^/]+\.json)$/.test(p))).toEqual([]);
    }
    // Nothing of State Flow's beside it either: no hidden folder, database or history copy in Pi's folders.
    const elsewhere = listing(h.root, ["agent/state-flow"]).filter((p) => p !== "agent/state-flow/");
    expect(elsewhere, "the walk saw Pi's folders").toContain("agent/");
    // state-flow.json is the one agent-level file of State Flow's (read, never written); none is made here.
    expect(elsewhere.filter((p) => /state-flow|scopes\/|history|\.db$|sqlite/i.test(p))).toEqual([]);
  });
});
