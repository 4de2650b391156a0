// The demo's history section (scripts/demo-history.ts), read from one demo run as a person reads it:
// the history lists the boundary the section looks back to, show and diff name it, and the fork at it
// starts with the parent's session state there (not the parent's newest), patches its own session scope
// in a run of its own, and leaves the parent's state as it was. The rest of the demo: demo-session.test.ts.
import { beforeAll, describe, expect, it } from "vitest";
import { runDemo, type DemoResult } from "../../scripts/demo-session.ts";
import { LOOK_BACK } from "../../scripts/demo-history.ts";

let result: DemoResult;
let text: string;
/** The lines of the section titled `title` (up to the next `── … ──` heading). */
const section = (title: string): string[] => {
  const start = result.lines.findIndex((l) => l.startsWith(`── ${title} `));
  expect(start, `section "${title}"`).toBeGreaterThanOrEqual(0);
  const end = result.lines.findIndex((l, i) => i > start && l.startsWith("── "));
  return result.lines.slice(start, end);
};

beforeAll(async () => {
  result = await runDemo({ print: () => undefined });
  text = result.lines.join("\n");
}, 60_000);

describe("the demo's history, diff and fork", () => {
  it("lists the session scope's history, shows an older boundary and diffs it against now", () => {
    const history = section("/state-flow-history session").join("\n");
    expect(history).toContain("[notice:info] State Flow history — the hot window (offsets 0–7), newest first");
    expect(history).toMatch(new RegExp(`^ +${LOOK_BACK} +t-[0-9a-f]{8} +step 11 .*session: response changed$`, "m"));
    const show = section(`/state-flow-show session ${LOOK_BACK}`).join("\n");
    expect(show).toMatch(new RegExp(`State Flow state — scope session, offset ${LOOK_BACK} — step 11 \\(t-`));
    expect(show).toContain('task: "rm follows the CLI conventions"');
    const diff = section(`/state-flow-diff ${LOOK_BACK} 0 session`).join("\n");
    expect(diff).toMatch(
      new RegExp(`from offset ${LOOK_BACK} — step 11 \\(t-[0-9a-f]{8}\\)\\n +to +offset 0 — step 15`),
    );
    expect(diff).toContain('~ working.task: "rm follows the CLI conventions" → "list in house style"');
    expect(diff).toContain('+ working.next: "re-read the changed CLI conventions"');
  });

  it("forks at the checkpoint entry that recorded that boundary, with the parent's session state there", () => {
    const fork = section(`a fork at offset ${LOOK_BACK} (step 11)`).join("\n");
    expect(fork).toContain(`what Pi's /fork at its checkpoint entry and /state-flow-fork ${LOOK_BACK} do`);
    expect(fork).toMatch(
      /checkpoint entry [0-9a-f]{8} \(custom, state-flow\): revision [0-9a-f]{7}, boundary step 11 t-/,
    );
    expect(fork).toContain(
      "[notice:info] This session is a fork of a State Flow session: State Flow is on here, with its own copy " +
        "of the session state at the fork point (step 11, ",
    );
    expect(fork).toContain(
      "fork's session state:   = the parent's at the fork (step 11), not its newest: " +
        '{"working":{"status":"implemented","task":"rm follows the CLI conventions"}',
    );
    // The store records the fork's own session, started from the parent's step 11.
    expect(result.gitLog).toContainEqual(
      expect.stringMatching(/state-flow: start session \S+ as a fork of \S+ at step 11$/),
    );
  });

  it("runs once in the fork, patching its session scope; the parent's state stays as it was", () => {
    const run = section("Run 10: in the fork: its own session patch").join("\n");
    expect(run).toContain("✓ patch_state: Accepted transition step 15 (session).");
    expect(run).toContain("→ accepted as session.response");
    expect(run).toMatch(/fork's session state: +\{"working":\{"status":"planned","task":"--json flag"\}/);
    expect(run).toContain(
      "parent's session state: unchanged: " +
        '{"working":{"next":"re-read the changed CLI conventions","status":"implemented","task":"list in house style"}',
    );
    // The section sits between the runs and the status, and the parent is still the session the status reports on.
    expect(text.indexOf("── /state-flow-history session")).toBeGreaterThan(text.indexOf("── Run 9:"));
    expect(text.indexOf("── /state-flow-status")).toBeGreaterThan(text.indexOf("── Run 10:"));
    expect(result.finalState).toMatchObject({ working: { task: "list in house style" } });
  });
});
