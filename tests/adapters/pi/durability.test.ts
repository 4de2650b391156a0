// Durability through a real Pi session (faux model, real files, real git): a poison patch is a
// named error that changes nothing; a cohort the store accepted but the branch never recorded
// (the process died in between) is restored whole, never next to an older session layer; a
// restore that has to skip newer checkpoints says so.

import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cwdKey, sessionKeyFromFile } from "../../../storage/layout.ts";
import { StateStore } from "../../../storage/state-store.ts";
import { openStore } from "../../../storage/open-store.ts";
import { PiHarness, call, contextText, harnessFactory, say } from "../../support/pi-harness.ts";

const harness = harnessFactory();

/** Every store file's bytes (outside .git), to prove a refusal changed nothing. */
function storeBytes(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const path of readdirSync(root, { recursive: true, encoding: "utf8" })) {
    if (path.startsWith(".git") || !statSync(join(root, path)).isFile()) continue;
    out[path] = readFileSync(join(root, path), "utf8");
  }
  return out;
}

function toolResults(h: PiHarness): string[] {
  return h.session.messages
    .filter((m) => m.role === "toolResult")
    .map((m) => ((m as { content: { text?: string }[] }).content ?? []).map((c) => c.text ?? "").join(""));
}

const all = (n: number) => ({ global: { working: { n } }, cwd: { working: { n } }, session: { working: { n } } });

/** The StateStore of the harness's own session, as a second writer of its cohorts. */
async function sameSessionStore(h: PiHarness): Promise<StateStore> {
  const file = h.session.sessionManager.getSessionFile()!;
  const identity = {
    cwd: h.cwd,
    cwdKey: cwdKey(h.cwd),
    sessionId: h.session.sessionManager.getSessionId(),
    sessionKey: sessionKeyFromFile(file),
  };
  return new StateStore(await openStore({ root: h.storeRoot, env: h.env }), identity);
}

describe.each([true, false])("durability in a real Pi session (git: %s)", (gitMode) => {
  it("a null inside an array inside a patch is a named error; nothing changes and the branch reopens", async () => {
    const h = await harness({ sessionKind: "file", git: gitMode });
    await h.command("/state-flow-start");
    h.script(call("patch_state", { ...all(1), final: true }), say("one"));
    await h.prompt("first");
    const before = storeBytes(h.storeRoot);
    let afterRefusal: Record<string, string> = {};
    const finalOnly = call("patch_state", { final: true });
    h.script(
      call("patch_state", { session: { contract: { deep: [{ a: null }] } } }),
      () => {
        afterRefusal = storeBytes(h.storeRoot);
        return finalOnly();
      },
      say("two"),
    );
    await h.prompt("poison");
    expect(toolResults(h).at(-2)).toMatch(/session\.contract\.deep\[0\]\.a: null inside an array/);
    expect(afterRefusal).toEqual(before);
    h.script(call("patch_state", { ...all(2), final: true }), say("three"));
    await h.prompt("after");
    const reopened = await harness({
      shareWith: h,
      openFile: h.session.sessionManager.getSessionFile()!,
      git: gitMode,
    });
    expect(reopened.accessor.read(0, "session").state.working).toEqual({ n: 2 });
    expect(reopened.notices.filter((n) => n.level !== "info")).toEqual([]);
  });

  it(
    "a cohort the store accepted but the branch never recorded is restored whole, " + "and every scope patches again",
    async () => {
      const h = await harness({ sessionKind: "file", git: gitMode });
      await h.command("/state-flow-start");
      h.script(call("patch_state", { ...all(1), final: true }), say("one"));
      await h.prompt("first");
      // What a kill between the store's publication and Pi's branch entry leaves behind.
      const store = await sameSessionStore(h);
      const runtime = (await store.loadCurrent())!;
      await store.commit(runtime, all(2), "accepted, never recorded on the branch");
      const reopened = await harness({
        shareWith: h,
        openFile: h.session.sessionManager.getSessionFile()!,
        git: gitMode,
      });
      expect(reopened.notices.map((n) => n.message).join("\n")).toMatch(
        /restored step \d+ .*the session ended before this branch recorded it/,
      );
      for (const scope of ["global", "cwd", "session"] as const) {
        expect(reopened.accessor.read(0, scope).state.working).toEqual({ n: 2 });
      }
      reopened.script(call("patch_state", { ...all(3), final: true }), say("three"));
      await reopened.prompt("again");
      expect(toolResults(reopened).at(-1)).toMatch(/^Accepted transition/);
      for (const scope of ["global", "cwd", "session"] as const) {
        expect(reopened.accessor.read(0, scope).state.working).toEqual({ n: 3 });
      }
      // Reopening again finds the branch up to date: no second catch-up.
      const again = await harness({ shareWith: h, openFile: h.session.sessionManager.getSessionFile()!, git: gitMode });
      expect(again.notices.map((n) => n.message).join("\n")).not.toMatch(/never recorded|before this branch recorded/);
      expect(again.accessor.read(0, "session").state.working).toEqual({ n: 3 });
    },
  );
});

describe.each([true, false])("what a real Pi session's store holds (git: %s)", (gitMode) => {
  it("is owner-only under the usual umask: directories 0700, files 0600 (git's own files aside)", async () => {
    const previous = process.umask(0o022);
    try {
      const h = await harness({ sessionKind: "file", git: gitMode });
      await h.command("/state-flow-start");
      h.script(call("patch_state", { ...all(1), final: true }), say("one"));
      await h.prompt("first");
      const entries = readdirSync(h.storeRoot, { recursive: true, encoding: "utf8" }).filter(
        (p) => !p.startsWith(".git"),
      );
      expect(entries.length).toBeGreaterThan(8);
      expect(statSync(h.storeRoot).mode & 0o777).toBe(0o700);
      for (const path of entries) {
        const st = statSync(join(h.storeRoot, path));
        expect(st.mode & 0o777, path).toBe(st.isDirectory() ? 0o700 : 0o600);
      }
    } finally {
      process.umask(previous);
    }
  });
});

describe.each([true, false])("a durable stop the branch never recorded (git: %s)", (gitMode) => {
  it("is recorded on reopen: passive with the frozen handoff, and a restart continues from it", async () => {
    const h = await harness({ sessionKind: "file", git: gitMode });
    await h.command("/state-flow-start");
    h.script(call("patch_state", { ...all(1), final: true }), say("one"));
    await h.prompt("PRE-STOP REQUEST");
    const store = await sameSessionStore(h);
    const runtime = (await store.loadCurrent())!;
    await store.publishConfig(runtime, { ...runtime.config, enabled: false }, "stop, never recorded on the branch");
    const reopened = await harness({
      shareWith: h,
      openFile: h.session.sessionManager.getSessionFile()!,
      git: gitMode,
    });
    expect(reopened.notices.map((n) => n.message).join("\n")).toMatch(/the stop at step \d+ .* it is recorded now/);
    expect(reopened.accessor.episode()).toBe("passive");
    reopened.script(say("passive answer"));
    await reopened.prompt("after");
    const text = contextText(reopened.contexts[0]!);
    expect(text).toContain("frozen exit handoff");
    expect(text).not.toContain("PRE-STOP REQUEST");
    await reopened.command("/state-flow-start");
    expect(reopened.accessor.read(0, "session").state.working).toEqual({ n: 1 });
  });
});

describe.each([true, false])("a publisher that died holding the lock (git: %s)", (gitMode) => {
  it("is named at reopen with its one remedy, and doing exactly that restores and patches again", async () => {
    const h = await harness({ sessionKind: "file", git: gitMode });
    await h.command("/state-flow-start");
    h.script(call("patch_state", { ...all(1), final: true }), say("one"));
    await h.prompt("first");
    const dead = spawnSync(process.execPath, ["-e", ""]).pid!;
    const lock = join(h.storeRoot, gitMode ? ".git/state-flow-publication.lock" : ".state-flow-publication.lock");
    writeFileSync(
      lock,
      JSON.stringify({
        pid: dead,
        host: hostname(),
        acquiredAt: new Date().toISOString(),
        generation: "g",
        token: "t",
      }),
    );
    const reopened = await harness({
      shareWith: h,
      openFile: h.session.sessionManager.getSessionFile()!,
      git: gitMode,
    });
    const warning = reopened.notices.find((n) => /no longer running/.test(n.message))?.message ?? "";
    expect(warning).toContain(`Remove ${lock} and retry`);
    expect(reopened.accessor.episode()).toBe("failedClosed.lockBusy");
    rmSync(lock);
    await reopened.command("/state-flow-start");
    expect(reopened.accessor.episode()).toMatch(/^active/);
    reopened.script(call("patch_state", { ...all(2), final: true }), say("two"));
    await reopened.prompt("again");
    for (const scope of ["global", "cwd", "session"] as const) {
      expect(reopened.accessor.read(0, scope).state.working).toEqual({ n: 2 });
    }
  });
});

describe("restore that skips newer checkpoints", () => {
  it("names what it skipped and why", async () => {
    const h = await harness({ sessionKind: "file" });
    await h.command("/state-flow-start");
    h.script(call("patch_state", { ...all(1), final: true }), say("one"));
    await h.prompt("first");
    h.session.sessionManager.appendCustomEntry("state-flow", { revision: "0".repeat(40) });
    const reopened = await harness({ shareWith: h, openFile: h.session.sessionManager.getSessionFile()! });
    expect(reopened.accessor.read(0, "session").state.working).toEqual({ n: 1 });
    const warning = reopened.notices.find((n) => n.level === "warning")?.message ?? "";
    expect(warning).toMatch(
      /restored step \d+ .*not the newest checkpoint of this branch: 1 newer checkpoint entry could not be loaded/,
    );
    expect(warning).toContain("0000000000000000");
  });
});
