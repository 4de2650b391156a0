// Several real Pi sessions on one store, driven by random steps: each session patches the global,
// cwd or session scope, is reopened from its session file, or selects one of its checkpoints with
// /tree. After every step, every session's read_state equals an oracle built from accepted
// cohorts only; every refusal is named (`shared-scope-advanced`), and following its advice
// (re-read, patch again) makes the next attempt succeed. File-only and Git stores alike.
//
// The oracle's model of what a session sees: a shared scope as the session last read it. A run of a
// session at the head of its branch (its live session files are the ones it holds) starts by
// adopting the live shared scopes (fresh runs); every completed run ends with an accepted cohort
// (its response) that adopts them too, and the branch records it; a refusal re-reads them.
// Selecting a checkpoint (reopen: the newest) restores it: with Git, exactly that cohort (its
// session layer and the shared scopes it held), a selected past its next run keeps — so only such
// a session's patch of a shared scope can be refused; a file-only checkpoint covers only the
// session's own files, so the newest one restores with the live shared scopes, and an older one,
// whose session files were replaced since, fails closed.

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { ScopeName } from "../../../storage/core/scope-state.ts";
import { call, harnessFactory, say, type PiHarness } from "../../support/pi-harness.ts";

const SESSIONS = 3;
const STEPS = 16;
const RUNS = 6;
const harness = harnessFactory();

type Working = Record<string, number>;
type Shared = { global: Working; cwd: Working };
type Versions = { global: number; cwd: number };

type Step =
  | { kind: "patch"; session: number; scope: ScopeName; key: string }
  | { kind: "reopen"; session: number }
  /** `back` checkpoints before the branch's newest (0: the newest, which Pi treats as a no-op). */
  | { kind: "tree"; session: number; back: number };

const session = fc.integer({ min: 0, max: SESSIONS - 1 });
const stepArb: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant("patch" as const),
      session,
      scope: fc.constantFrom<ScopeName>("global", "cwd", "session"),
      key: fc.constantFrom("a", "b"),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("reopen" as const), session }) },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant("tree" as const), session, back: fc.integer({ min: 0, max: 2 }) }),
  },
);

/** What a session shows: shared scopes as last read (with the versions read), its own layer. */
interface View {
  shared: Shared;
  seen: Versions;
  own: Working;
  response: string;
}

interface SessionModel {
  view: View;
  /** The branch's recorded response cohorts, oldest first: Pi entry id and the view it restores. */
  checkpoints: { entryId: string; view: View }[];
  /** The session's newest accepted cohort on any of its branches: the one its files hold now. */
  latest: string | null;
  /**
   * The checkpoints of the branch that ends at the session file's last entry: the branch Pi opens
   * on reopen (a /tree selection appends nothing, so it does not survive a reopen by itself).
   */
  fileBranch: { entryId: string; view: View }[];
  failedClosed: boolean;
  /** The branch holds the session's newest cohort (not a selected past): its next run adopts the live shared scopes. */
  atHead: boolean;
}

const copyView = (v: View): View => ({
  shared: { global: { ...v.shared.global }, cwd: { ...v.shared.cwd } },
  seen: { ...v.seen },
  own: { ...v.own },
  response: v.response,
});

function newestCheckpoint(h: PiHarness): string {
  const entry = [...h.session.sessionManager.getBranch()]
    .reverse()
    .find((e) => e.type === "custom" && e.customType === "state-flow");
  return entry!.id;
}

class World {
  readonly sessions: PiHarness[] = [];
  readonly model: SessionModel[] = [];
  live: Shared = { global: {}, cwd: {} };
  versions: Versions = { global: 0, cwd: 0 };
  refusals = 0;
  restoredOlder = 0;
  /** Runs that started by adopting another session's shared change. */
  adopted = 0;
  private value = 0;

  readonly base: PiHarness;
  readonly git: boolean;

  private constructor(base: PiHarness, git: boolean) {
    this.base = base;
    this.git = git;
  }

  private get options() {
    return this.git ? {} : { git: false };
  }

  static async open(git: boolean): Promise<World> {
    const world = new World(await harness(git ? {} : { git: false }), git);
    for (let i = 0; i < SESSIONS; i++) {
      const h = await harness({ ...world.options, shareWith: world.base, sessionKind: "file" });
      await h.command("/state-flow-start");
      world.sessions.push(h);
      const view = { shared: { global: {}, cwd: {} }, seen: { ...world.versions }, own: {}, response: "" };
      world.model.push({ view, checkpoints: [], latest: null, fileBranch: [], failedClosed: false, atHead: true });
      // Pi writes a session file with its first answer: one run makes every session reopenable.
      await world.patch(i, "session", "a");
    }
    return world;
  }

  async apply(step: Step): Promise<void> {
    const i = step.session;
    if (step.kind === "patch") return this.patch(i, step.scope, step.key);
    const model = this.model[i]!;
    const h = this.sessions[i]!;
    if (step.kind === "reopen") {
      const file = h.session.sessionManager.getSessionFile()!;
      await h.session.dispose();
      this.sessions[i] = await harness({ ...this.options, shareWith: this.base, openFile: file });
      model.checkpoints = [...model.fileBranch];
      this.restore(model, model.checkpoints.length - 1);
    } else {
      const index = model.checkpoints.length - 1 - Math.min(step.back, model.checkpoints.length - 1);
      const target = model.checkpoints[index]!;
      if (target.entryId === newestCheckpoint(h) && h.session.sessionManager.getLeafId() === target.entryId) return;
      await h.session.navigateTree(target.entryId, {} as never);
      this.restore(model, index);
      model.checkpoints.splice(index + 1);
    }
    const episode = this.sessions[i]!.accessor.episode();
    if (model.failedClosed) expect(episode, `session ${i} fails closed`).toBe("failedClosed.unproven");
    else expect(episode, `session ${i} restores its checkpoint`).toMatch(/^active\./);
  }

  /** What selecting the branch's checkpoint `index` restores (see the header). */
  private restore(model: SessionModel, index: number): void {
    const target = model.checkpoints[index]!;
    if (this.git) {
      if (index < model.checkpoints.length - 1) this.restoredOlder++;
      model.view = copyView(target.view);
      model.failedClosed = false;
      model.atHead = target.entryId === model.latest;
    } else if (target.entryId === model.latest) {
      model.view = { ...copyView(target.view), shared: structuredClone(this.live), seen: { ...this.versions } };
      model.failedClosed = false;
      model.atHead = true;
    } else {
      model.failedClosed = true;
    }
  }

  async patch(i: number, scope: ScopeName, key: string): Promise<void> {
    const h = this.sessions[i]!;
    const model = this.model[i]!;
    const value = ++this.value; // a fresh value: no patch is a no-op
    const answer = `answer ${value}`;
    const patch = { [scope]: { working: { [key]: value } }, final: true };
    const before = h.toolResults().length;
    const inferences = h.contexts.length;
    // The model patches; when that is refused it follows the refusal's advice (re-read, patch again).
    h.script(
      call("patch_state", patch),
      () => (h.toolResults().at(-1)!.isError ? call("read_state", { scope })() : say(answer)()),
      () => call("patch_state", patch)(),
      () => say(answer)(),
    );
    await h.prompt(`session ${i}: ${scope}.${key} = ${value}`);
    h.faux.setResponses([]);
    if (model.failedClosed) {
      expect(h.contexts.length, `session ${i} is failed closed: no inference`).toBe(inferences);
      expect(h.lastNotice()?.message).toMatch(/^State Flow did not run this prompt: it is failed closed/);
      return;
    }
    // A run at the head of its branch starts from the newest shared state (adopted before its first context).
    if (model.atHead) {
      if (model.view.seen.global !== this.versions.global || model.view.seen.cwd !== this.versions.cwd) this.adopted++;
      model.view = { ...model.view, shared: structuredClone(this.live), seen: { ...this.versions } };
    }
    const results = h.toolResults().slice(before);
    const refused = scope !== "session" && model.view.seen[scope] !== this.versions[scope];
    if (refused) {
      this.refusals++;
      expect(
        results.map((r) => r.isError),
        `session ${i}: refused, re-read, accepted`,
      ).toEqual([true, false, false]);
      expect(results[0]!.text).toContain(`the ${scope} scope advanced in another session`);
      const reread = JSON.parse(results[1]!.text) as { state: { working?: Working } };
      expect(reread.state.working ?? {}, "read_state shows the other session's change").toEqual(this.live[scope]);
    } else {
      expect(
        results.map((r) => r.isError),
        `session ${i}: ${scope} patch accepted at once`,
      ).toEqual([false]);
    }
    if (scope === "session") model.view.own[key] = value;
    else {
      this.live[scope][key] = value;
      this.versions[scope]++;
    }
    // The run's response cohort adopts the live shared scopes; the branch records that cohort.
    model.view = { ...model.view, shared: structuredClone(this.live), seen: { ...this.versions }, response: answer };
    model.latest = newestCheckpoint(h);
    model.atHead = true;
    model.checkpoints.push({ entryId: model.latest, view: copyView(model.view) });
    model.fileBranch = [...model.checkpoints];
  }

  check(where: string): void {
    this.sessions.forEach((h, i) => {
      const model = this.model[i]!;
      expect(h.extensionErrors(), where).toEqual([]);
      if (model.failedClosed) return; // nothing to read: the branch's provenance is unproven
      const read = (scope: ScopeName) => h.accessor.read(0, scope).state;
      expect(read("global").working, `session ${i} global — ${where}`).toEqual(model.view.shared.global);
      expect(read("cwd").working, `session ${i} cwd — ${where}`).toEqual(model.view.shared.cwd);
      expect(read("session").working, `session ${i} session — ${where}`).toEqual(model.view.own);
      expect(read("session").response, `session ${i} response — ${where}`).toBe(model.view.response);
    });
  }
}

for (const git of [true, false]) {
  describe(`${SESSIONS} sessions on one ${git ? "Git" : "file-only"} store, random steps`, () => {
    it(`${RUNS} runs × ${STEPS} steps: read_state equals the oracle; each refusal is named, recoverable`, async () => {
      const totals = { refusals: 0, restoredOlder: 0, adopted: 0 };
      await fc.assert(
        fc.asyncProperty(fc.array(stepArb, { minLength: STEPS, maxLength: STEPS }), async (steps) => {
          const world = await World.open(git);
          world.check("after start");
          for (const [n, step] of steps.entries()) {
            await world.apply(step);
            world.check(`step ${n + 1} ${JSON.stringify(step)}`);
          }
          totals.refusals += world.refusals;
          totals.restoredOlder += world.restoredOlder;
          totals.adopted += world.adopted;
        }),
        { numRuns: RUNS, endOnFailure: true },
      );
      expect(totals.adopted, "the steps exercised runs that adopt another session's change").toBeGreaterThan(0);
      // Only a Git branch restored to its past can be refused (file-only: such a restore fails closed).
      if (!git) expect(totals.refusals, "a file-only session at its head is never refused").toBe(0);
    }, 300_000);
  });
}
