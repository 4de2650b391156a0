// A person sees the state and its history (issue 30): /state-flow-show, /state-flow-history and
// /state-flow-diff in real Pi sessions, on a Git store and a file-only one. Git keeps every
// boundary, so --all lists ones older than the hot window; file-only says where its history ends
// and why. Every bad argument is refused by name, and what the refusal says to type works.
import { describe, expect, it } from "vitest";
import { call, harnessFactory, say, type PiHarness } from "../../support/pi-harness.ts";
import type { JsonObject } from "../../../storage/core/json.ts";

const harness = harnessFactory();

/** The text of the notice the last command showed, and its level. */
async function run(h: PiHarness, command: string): Promise<{ text: string; level: string }> {
  const before = h.notices.length;
  await h.command(command);
  const shown = h.notices.slice(before);
  expect(shown, command).toHaveLength(1);
  return { text: shown[0]!.message, level: shown[0]!.level };
}

/** Ten runs, each one patch (a session key, a long plan; every third also cwd) and its answer: 20 transitions. */
async function tenRuns(h: PiHarness): Promise<void> {
  await h.command("/state-flow-start");
  for (let n = 0; n < 10; n++) {
    const cwd: Record<string, JsonObject> = n % 3 === 0 ? { cwd: { contract: { db: `v${n}` } } } : {};
    h.script(
      call("patch_state", { session: { working: { [`k${n}`]: n, plan: `${n}`.repeat(300) } }, ...cwd, final: true }),
      say(`answer ${n}`),
    );
    await h.prompt(`step ${n}`);
  }
}

/** The short ids of a history's lines, in order. */
function ids(text: string): string[] {
  return [...text.matchAll(/^ {0,2}\d? {2}(t-[0-9a-f]{8}|l-[0-9a-f]{8})/gm)].map((m) => m[1]!);
}

for (const git of [true, false]) {
  const mode = git ? "Git" : "file-only";
  describe(`seeing the state and its history, ${mode} store`, () => {
    it("show, history, diff by offsets and by transition id", async () => {
      const h = await harness(git ? {} : { git: false });
      const off = await run(h, "/state-flow-show");
      expect(off.level).toBe("warning");
      expect(off.text).toContain("State Flow is off on this branch");
      expect(off.text).toContain("/state-flow-start");
      await tenRuns(h);

      const shown = await run(h, "/state-flow-show");
      expect(shown.level).toBe("info");
      expect(shown.text.split("\n")[0]).toMatch(
        /^State Flow state — scope effective, offset 0 — step 20 \(t-[0-9a-f]{8}\)$/,
      );
      expect(shown.text).toContain("working — 11 keys");
      expect(shown.text).toContain('  db: "v9"');
      // The long plan is folded, and its hint is a command that works.
      const hint = /— (\/state-flow-show effective 0 working\.plan) shows it whole/.exec(shown.text);
      expect(hint, shown.text).not.toBeNull();
      const whole = await run(h, hint![1]!);
      expect(whole.text).toContain(`working.plan — 300 chars:\n${"9".repeat(300)}`);
      const old = await run(h, "/state-flow-show session 2 working.plan");
      expect(old.text).toContain("8".repeat(300));

      const hot = await run(h, "/state-flow-history");
      const lines = hot.text.split("\n");
      expect(lines[0]).toBe("State Flow history — the hot window (offsets 0–7), newest first; scope effective");
      // When: the time Pi recorded the boundary's revision, which a Git store reads back; file-only cannot say.
      const time = git ? " {2}\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d" : "";
      expect(lines[2]).toMatch(new RegExp(`^ 0 {2}t-[0-9a-f]{8} {2}step 20${time} {2}session: response changed$`));
      expect(lines[3]).toMatch(
        / 1 {2}t-[0-9a-f]{8} {2}step 19 .* cwd: ~contract\.db; session: \+working\.k9 ~working\.plan$/,
      );
      expect(ids(hot.text)).toHaveLength(8);

      // Diff by offsets, then by the ids history printed: the same difference.
      const byOffset = await run(h, "/state-flow-diff 3 0");
      expect(byOffset.text).toContain("+ working.k9: 9");
      expect(byOffset.text).toContain('~ contract.db: "v6" → "v9"');
      expect(byOffset.text).toContain('~ response: "answer 7" → "answer 9"');
      expect(byOffset.text).toContain("/state-flow-show effective 3 working.plan shows it whole");
      const [id0, , , id3] = ids(hot.text);
      const byId = await run(h, `/state-flow-diff ${id3} ${id0!.slice(2, 8)}`);
      expect(byId.text.split("\n").slice(3)).toEqual(byOffset.text.split("\n").slice(3));
      const sessionOnly = await run(h, "/state-flow-diff 3 0 session");
      expect(sessionOnly.text).not.toContain("contract.db");

      const all = await run(h, "/state-flow-history --all");
      if (git) {
        // Older than the hot window: read back from Git, 20 per page, and the second page ends at the origin.
        expect(ids(all.text)).toHaveLength(20);
        expect(all.text).toMatch(
          /^ {4}t-[0-9a-f]{8} {2}step 1 .*cwd: \+contract\.db; session: \+working\.k0 \+working\.plan$/m,
        );
        expect(all.text).toContain("… older: /state-flow-history effective --all --page 2");
        const page2 = await run(h, "/state-flow-history effective --all --page 2");
        expect(page2.text).toMatch(/^ {4}l-[0-9a-f]{8} {2}step 0 .*origin: State Flow started this line/m);
        expect(page2.text).toContain("History starts at step 0");
        // A cold boundary by its id: show and diff read it from Git.
        const cold = ids(all.text)[15]!;
        const coldShow = await run(h, `/state-flow-show session ${cold}`);
        expect(coldShow.text).toContain(`older than the hot window — step 5 (${cold}`);
        expect(coldShow.text).toContain("k2: 2");
        expect(coldShow.text).not.toContain("k3");
        const coldDiff = await run(h, `/state-flow-diff ${cold} 0 session`);
        expect(coldDiff.text).toContain("+ working.k3: 3");
      } else {
        expect(ids(all.text)).toHaveLength(8);
        expect(all.text).toContain("History shown ends at step 13: this store is file-only");
        expect(all.text).toContain("keep the last 8 boundaries");
        expect(lines.at(-1)).toContain("History shown ends at step 13");
        expect(all.text).toMatch(
          /^ 7 .*changes not shown: the boundary before it is no longer kept \(file-only store\)$/m,
        );
        const gone = await run(h, "/state-flow-diff t-00000000 0");
        expect(gone.text).toContain("file-only: it keeps the last eight boundaries");
      }
      expect(h.extensionErrors()).toEqual([]);
    });

    it("refuses bad arguments by name, and what it says to do works", async () => {
      const h = await harness(git ? {} : { git: false });
      await tenRuns(h);
      const refusals: [string, string, string][] = [
        ["/state-flow-show session 9", "Offset 9 is outside the hot window (offsets 0–7)", "/state-flow-history --all"],
        [
          "/state-flow-show sesion 0",
          '"sesion" is not a scope, an offset 0–7, a transition id or a field of the state',
          "/state-flow-show session 0 working",
        ],
        ["/state-flow-show session 0 working.nope", 'No value at "working.nope"', "/state-flow-show session 0 working"],
        ["/state-flow-history --page x", "--page needs a page number", "/state-flow-history --all --page 1"],
        ["/state-flow-history --everything", 'does not know "--everything"', "/state-flow-history"],
        ["/state-flow-history --all --page 9", "No page 9", ""],
        ["/state-flow-diff 0", "needs two boundaries", "/state-flow-diff 1 0 session"],
        ["/state-flow-diff t-12 0", "is not an offset or a transition id", ""],
      ];
      for (const [command, says, then] of refusals) {
        const refused = await run(h, command);
        expect(refused.level, command).toBe("warning");
        expect(refused.text, command).toContain(says);
        if (!then) continue;
        expect(refused.text, command).toContain(then);
        expect((await run(h, then)).level, then).toBe("info");
      }
      if (git) {
        const last = await run(h, "/state-flow-history --all --page 9");
        const advice = /(\/state-flow-history effective --all --page \d+) shows the last/.exec(last.text)![1]!;
        expect((await run(h, advice)).text).toContain("History starts at step 0");
      }
      expect(h.extensionErrors()).toEqual([]);
    });

    it("after a stop, shows the state kept at the stop", async () => {
      const h = await harness(git ? {} : { git: false });
      await tenRuns(h);
      await h.command("/state-flow-stop");
      const stopped = await run(h, "/state-flow-show session 0 working.k9");
      expect(stopped.level).toBe("info");
      expect(stopped.text).toContain("State Flow is stopped on this branch: this is the state kept at the stop");
      expect(stopped.text).toMatch(/working\.k9 — 1 char:\n9$/);
      const history = await run(h, "/state-flow-history");
      expect(history.text).toContain("State Flow is stopped on this branch");
    });
  });
}
