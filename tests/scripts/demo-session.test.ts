import { existsSync, rmSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runDemo } from "../../scripts/demo-session.ts";

describe("npm run demo", () => {
  it("runs the nine scripted runs through a real Pi session and removes its temp dir", async () => {
    const result = await runDemo({ print: () => undefined });
    const text = result.lines.join("\n");
    expect(existsSync(result.root)).toBe(false);
    // every scope in one cohort, the barrier block, the hidden steer, the historical read
    expect(text).toContain("✓ patch_state: Accepted transition step 1 (global, cwd, session).");
    expect(text).toMatch(/✗ read_state: Blocked: read_state cannot run in the same assistant batch as patch_state/);
    expect(text).toMatch(/⤷ hidden steer .*State Flow resolution 1\/3/);
    expect(text).toContain(
      'context: [runtime-context, user "Add a --done flag.", hidden-steer, runtime-context (volatile part)]',
    );
    expect(text).toMatch(/✓ read_state: state\.session\[1\] = boundary step 5: .*"status":"implemented"/);
    // stop → passive (no tools, frozen handoff), restart → bootstrap from that handoff
    expect(text).toContain("after:  episode passive, step 7, State Flow tools off");
    expect(text).toContain('context: [frozen-handoff, user "Unrelated: what is 2+2?"]');
    expect(text).toContain('answer: "4." → not committed');
    expect(text).toContain("episode active.bootstrap.fromHandoff");
    expect(text).toMatch(
      /context: \[runtime-context, frozen-handoff, user "Unrelated: what is 2\+2\?", assistant, user "Back to the CLI/,
    );
    // a Knowledge source: listed new, read, compiled (its hash recorded), then changed on disk
    expect(text).toMatch(/invalidated: {2}\S+\/agent\/knowledge\/cli-conventions\.md: new/);
    expect(text).toMatch(/model calls read \{"path":"\S+\/cli-conventions\.md"\}/);
    expect(text).toMatch(/✓ patch_state: Accepted transition step 10 \(global, session\)/);
    expect(text).toMatch(/invalidated: {2}\S+\/cli-conventions\.md: changed/);
    // a project Skill: read, the patch without its compilation refused, then compiled into cwd
    expect(text).toMatch(/model calls read \{"path":"\S+\/\.pi\/skills\/todo-style\/SKILL\.md"\}/);
    expect(text).toMatch(/✗ patch_state: You read \S+\/SKILL\.md \(a Skill\): a Skill read needs a cwd artifact/);
    expect(text).toMatch(/✓ patch_state: Accepted transition step 14 \(cwd, session\)/);
    // eight in the parent, one in the fork (demo-history.test.ts)
    expect(text.match(/→ accepted as session\.response/g)).toHaveLength(9);
    expect(text, "every runtime context's state[0] is read with its step").not.toMatch(
      /state\[0\]: +step (\?|\d+ \(unparsed\))/,
    );
    expect(text).toMatch(/state\[0\]: +step 3 \{"contract":\{[^\n]*"storage":"todos\.json"/);
    expect(text).toContain("State Flow status");
    expect(result.episode).toBe("active.steady");
    expect(result.finalState).toMatchObject({
      contract: { answerStyle: "short", project: "todo CLI", language: "TypeScript", storage: "todos.json" },
      working: { task: "list in house style", status: "implemented", next: "re-read the changed CLI conventions" },
      response: "`todo list` now prints `[ ] text` / `[x] text`, without colours when piped.",
    });
    expect(result.gitLog[0]).toMatch(/^[0-9a-f]{7,} state-flow: response$/);
    expect(result.gitLog.at(-1)).toMatch(/state-flow: start session /);
    // the parent's 18 commits, then the fork's start, patch and response
    expect(result.gitLog).toHaveLength(21);
  });

  it("--keep leaves the store for inspection", async () => {
    const result = await runDemo({ keep: true, print: () => undefined });
    try {
      expect(existsSync(join(result.storeRoot, ".git"))).toBe(true);
      expect(existsSync(join(result.storeRoot, "checkpoint.json"))).toBe(true);
      const status = spawnSync("git", ["status", "--porcelain"], {
        cwd: result.storeRoot,
        encoding: "utf8",
        env: { ...process.env, GIT_CONFIG_NOSYSTEM: "1" },
      });
      expect(status.stdout).toBe("");
    } finally {
      rmSync(result.root, { recursive: true, force: true });
    }
  });
});
