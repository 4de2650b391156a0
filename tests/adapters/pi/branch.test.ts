import type { SessionEntry } from "@earendil-works/pi-coding-agent";
import { describe, expect, it } from "vitest";
import {
  CHECKPOINT_ENTRY,
  DISCARDED_ENTRY,
  branchMarkers,
  branchShape,
  checkpointEntryOf,
  discardedDrafts,
  markerEntries,
} from "../../../adapters/pi/branch.ts";
import { STOP_HANDOFF } from "../../../adapters/pi/context.ts";

let n = 0;
const base = () => ({ id: `e${++n}`, parentId: null, timestamp: "2026-11-30T00:00:00.000Z" });
const checkpoint = (data: unknown) =>
  ({ ...base(), type: "custom", customType: CHECKPOINT_ENTRY, data }) as SessionEntry;
const handoff = (sessionId: string) =>
  ({
    ...base(),
    type: "custom_message",
    customType: STOP_HANDOFF,
    content: "x",
    display: false,
    details: { sessionId },
  }) as SessionEntry;
const message = () =>
  ({ ...base(), type: "message", message: { role: "user", content: "hi", timestamp: 1 } }) as SessionEntry;
const sha = "a".repeat(40);
const file = `file:${"b".repeat(64)}`;

describe("branchMarkers", () => {
  it("reads revisions (Git and file-only) and disabled markers in order", () => {
    expect(
      branchMarkers(
        [checkpoint({ revision: sha }), checkpoint({ revision: file }), checkpoint({ disabled: true })],
        "S",
      ),
    ).toEqual([{ kind: "revision", revision: sha }, { kind: "revision", revision: file }, { kind: "disabled" }]);
  });

  it("marks malformed entries so the restore falls back past them", () => {
    const markers = branchMarkers(
      [
        checkpoint({ revision: "HEAD" }),
        checkpoint({ revision: sha, extra: 1 }),
        checkpoint("x"),
        checkpoint({ disabled: "yes" }),
      ],
      "S",
    );
    expect(markers).toEqual([
      { kind: "malformed" },
      { kind: "malformed" },
      { kind: "malformed" },
      { kind: "malformed" },
    ]);
  });

  // Spec 001 "Runtime ownership": "Older config/meta and state-bearing checkpoints remain read-only
  // compatibility input." The entries below are written by hand from that sentence and from the list
  // of what current entries no longer copy ("Configuration, counters, specification, lineage, and
  // semantic state are not copied into these entries").
  it("reads an older config/meta or state-bearing entry for its pointer only", () => {
    const config = { version: 1, enabled: false, remotePublication: "off" };
    const meta = { counters: { transitions: 9, runs: 3 }, lineage: { id: "l-old", originStep: 0, window: [] } };
    const state = { session: { working: { copied: true } } };
    expect(
      branchMarkers(
        [
          checkpoint({ revision: sha, config, meta }),
          checkpoint({ revision: file, state }),
          checkpoint({ revision: sha, counters: {}, lineage: {}, specification: "do it" }),
        ],
        "S",
      ),
    ).toEqual([
      { kind: "revision", revision: sha, legacy: true },
      { kind: "revision", revision: file, legacy: true },
      { kind: "revision", revision: sha, legacy: true },
    ]);
  });

  // Spec 001: "an unanchored legacy semantic payload cannot be silently reduced to an ordinary-disabled marker".
  it("an older entry with state or an enabled runtime but no immutable pointer is unanchored, not disabled", () => {
    expect(
      branchMarkers(
        [
          checkpoint({ state: { session: { working: { a: 1 } } } }),
          checkpoint({ config: { enabled: true }, meta: { counters: { transitions: 1, runs: 1 } } }),
          checkpoint({ revision: "HEAD", state: {} }),
          checkpoint({ config: { enabled: false }, state: {} }),
        ],
        "S",
      ),
    ).toEqual([
      { kind: "unanchored", members: ["state"] },
      { kind: "unanchored", members: ["config", "meta"] },
      { kind: "unanchored", members: ["state"] },
      { kind: "unanchored", members: ["config", "state"] },
    ]);
  });

  it("an older stop (config enabled:false, no state, no pointer) is a disabled marker", () => {
    expect(branchMarkers([checkpoint({ config: { enabled: false }, meta: {} })], "S")).toEqual([{ kind: "disabled" }]);
    expect(branchMarkers([handoff("S"), checkpoint({ config: { enabled: false } })], "S")).toEqual([
      { kind: "disabled", stoppedBy: "S" },
    ]);
  });

  it("older members of the wrong type, or unknown members, stay malformed", () => {
    const markers = branchMarkers(
      [
        checkpoint({ revision: sha, config: "enabled" }),
        checkpoint({ revision: sha, state: [] }),
        checkpoint({ revision: 42, state: {} }),
        checkpoint({ config: { enabled: "no" } }),
        checkpoint({ state: null }),
        checkpoint({ revision: sha, state: {}, extra: 1 }),
        checkpoint({ disabled: true, config: {} }),
        checkpoint({ revision: sha, constructor: {} }),
      ],
      "S",
    );
    expect(markers).toEqual(Array.from({ length: 8 }, () => ({ kind: "malformed" })));
  });

  it("a disabled marker names the session whose stop handoff precedes it (this one's restores passive)", () => {
    expect(branchMarkers([handoff("S"), checkpoint({ disabled: true })], "S")).toEqual([
      { kind: "disabled", stoppedBy: "S" },
    ]);
    expect(branchMarkers([handoff("PARENT"), checkpoint({ disabled: true })], "S")).toEqual([
      { kind: "disabled", stoppedBy: "PARENT" },
    ]);
    expect(branchMarkers([checkpoint({ disabled: true })], "S")).toEqual([{ kind: "disabled" }]);
  });

  it("a checkpoint keeps the boundary it recorded; one copied before a fork is marked inherited", () => {
    const boundary = { id: "t-1", step: 3 };
    const copied = { ...checkpoint({ revision: sha, boundary }), timestamp: "2026-01-01T00:00:00.000Z" };
    const own = { ...checkpoint({ revision: sha, boundary }), timestamp: "2026-01-02T00:00:00.001Z" };
    expect(branchMarkers([copied, own], "S", "2026-01-02T00:00:00.000Z")).toEqual([
      { kind: "revision", revision: sha, boundary, inherited: true },
      { kind: "revision", revision: sha, boundary },
    ]);
    expect(branchMarkers([copied], "S")).toEqual([{ kind: "revision", revision: sha, boundary }]);
    // A boundary of another shape is no current entry, nor an older form: malformed.
    expect(branchMarkers([checkpoint({ revision: sha, boundary: { id: "t-1" } })], "S")).toEqual([
      { kind: "malformed" },
    ]);
  });
});

describe("checkpointEntryOf", () => {
  it("finds the newest checkpoint that recorded a boundary; an older entry that names none is not guessed", () => {
    const older = checkpoint({ revision: sha });
    const first = checkpoint({ revision: sha, boundary: { id: "t-1", step: 1 } });
    const again = checkpoint({ revision: sha, boundary: { id: "t-1", step: 1 } });
    const branch = [older, first, message(), again];
    expect(checkpointEntryOf(branch, branch, "t-1")).toBe(again);
    expect(checkpointEntryOf(branch, branch, "t-2")).toBeUndefined();
  });
});

describe("branchShape", () => {
  it("distinguishes empty, unmarked and marked branches", () => {
    expect(branchShape([])).toBe("empty");
    expect(branchShape([message()])).toBe("unmarked");
    expect(branchShape([message(), checkpoint({ revision: sha })])).toBe("marked");
  });
});

describe("discardedDrafts", () => {
  it("collects the recorded timestamps of every session's discards; ignores other entries and bad data", () => {
    const discard = (data: unknown) =>
      ({ ...base(), type: "custom", customType: DISCARDED_ENTRY, data }) as SessionEntry;
    const entries = [discard({ timestamp: 5, sessionId: "A" }), message(), discard({ timestamp: 9 }), discard("x")];
    expect([...discardedDrafts([...entries, checkpoint({ revision: sha })])]).toEqual([5, 9]);
  });
});

/**
 * A session tree as Pi writes it: each entry a child of the one before unless `parent` says
 * otherwise. `branch(leaf)` is Pi's getBranch() for that leaf, `all` its getEntries().
 */
function tree() {
  const all: SessionEntry[] = [];
  let last: string | null = null;
  const add = (entry: Record<string, unknown>, parent: string | null = last) => {
    const made = { ...base(), ...entry, parentId: parent } as SessionEntry;
    all.push(made);
    last = made.id;
    return made;
  };
  const said = (role: string, text: string, parent?: string | null) =>
    add({ type: "message", message: { role, content: [{ type: "text", text }], timestamp: n } }, parent);
  return {
    all,
    said,
    user: (text: string, parent?: string | null) => said("user", text, parent),
    assistant: (text: string, parent?: string | null) => said("assistant", text, parent),
    checkpoint: (revision: string, parent?: string | null) =>
      add({ type: "custom", customType: CHECKPOINT_ENTRY, data: { revision } }, parent),
    custom: (customType: string, data: unknown, parent?: string | null) =>
      add({ type: "custom", customType, data }, parent),
    note: (customType: string, parent?: string | null) =>
      add({ type: "custom_message", customType, content: "x", display: false }, parent),
    summary: (parent: string) => add({ type: "branch_summary", fromId: parent, summary: "s" }, parent),
    label: (targetId: string, parent?: string | null) => add({ type: "label", targetId, label: "l" }, parent),
    branch(leaf: string): SessionEntry[] {
      const byId = new Map(all.map((e) => [e.id, e]));
      const path: SessionEntry[] = [];
      for (let e = byId.get(leaf); e; e = e.parentId === null ? undefined : byId.get(e.parentId)) path.unshift(e);
      return path;
    },
  };
}

/** Two runs: "fixed." then "done D.", each answer followed by the checkpoint of its response. */
function twoRuns() {
  const t = tree();
  const revisions = { start: "0".repeat(40), fixed: "1".repeat(40), patched: "2".repeat(40), done: "3".repeat(40) };
  t.checkpoint(revisions.start, null);
  t.user("first");
  t.note("state-flow-run");
  const fixed = t.assistant("fixed.");
  const fixedCheckpoint = t.checkpoint(revisions.fixed);
  t.user("second");
  t.note("state-flow-run");
  t.assistant("patch_state call");
  t.checkpoint(revisions.patched);
  t.said("toolResult", "accepted");
  const done = t.assistant("done D.");
  const doneCheckpoint = t.checkpoint(revisions.done);
  return { t, revisions, fixed, fixedCheckpoint, done, doneCheckpoint };
}

const newestRevision = (entries: readonly SessionEntry[]) =>
  branchMarkers(entries, "S").findLast((m) => m.kind === "revision");

describe("markerEntries (a /tree selection of an answer)", () => {
  it("an answer selected (leaf = the assistant message): its own checkpoint is the branch's newest marker", () => {
    const { t, revisions, fixed, done, doneCheckpoint } = twoRuns();
    expect(markerEntries(t.branch(done.id), t.all)).toEqual([...t.branch(done.id), doneCheckpoint]);
    expect(newestRevision(markerEntries(t.branch(done.id), t.all))).toEqual({
      kind: "revision",
      revision: revisions.done,
    });
    expect(newestRevision(markerEntries(t.branch(fixed.id), t.all))).toEqual({
      kind: "revision",
      revision: revisions.fixed,
    });
    // Without the mapping the branch ends before the answer's checkpoint: the run before's state.
    expect(newestRevision(t.branch(fixed.id))).toEqual({ kind: "revision", revision: revisions.start });
  });

  it("an answer selected with a branch summary, a label, a loadout record or custom entries after it", () => {
    const { t, revisions, fixed } = twoRuns();
    t.summary(fixed.id);
    const label = t.label(fixed.id);
    expect(newestRevision(markerEntries(t.branch(label.id), t.all))).toEqual({
      kind: "revision",
      revision: revisions.fixed,
    });
    // Pi 1.6 records a tool loadout as a `system` message entry: no turn, so passed like the others.
    const loadout = t.said("system", "", fixed.id);
    expect(newestRevision(markerEntries(t.branch(loadout.id), t.all))).toEqual({
      kind: "revision",
      revision: revisions.fixed,
    });
    // The checkpoint is found through non-message entries between the answer and it.
    const u = tree();
    const answer = u.assistant("answer", null);
    u.custom("other-extension", {});
    u.custom(DISCARDED_ENTRY, { timestamp: 1 });
    const recorded = u.checkpoint(sha);
    expect(markerEntries(u.branch(answer.id), u.all)).toEqual([answer, recorded]);
  });

  it("a discarded draft selected: its resolution note stops the walk, the branch reads as it is", () => {
    const t = tree();
    t.checkpoint(sha, null);
    t.user("ask");
    t.note("state-flow-run");
    t.custom(DISCARDED_ENTRY, { timestamp: 7, sessionId: "S" });
    const draft = t.assistant("DRAFT");
    t.note("state-flow-resolution");
    t.assistant("accepted answer");
    t.checkpoint(file);
    expect(markerEntries(t.branch(draft.id), t.all)).toEqual(t.branch(draft.id));
    // A draft no resolution followed (every retry refused) has no checkpoint after it either.
    const last = t.assistant("DRAFT 3", draft.id);
    expect(markerEntries(t.branch(last.id), t.all)).toEqual(t.branch(last.id));
  });

  it("a user message selected (leaf = its parent, the answer's checkpoint): unchanged", () => {
    const { t, fixedCheckpoint } = twoRuns();
    expect(markerEntries(t.branch(fixedCheckpoint.id), t.all)).toEqual(t.branch(fixedCheckpoint.id));
    // A user message as the newest message (a prompt continued from a selected answer) maps nothing.
    const { t: u, fixed } = twoRuns();
    const next = u.user("again", fixed.id);
    expect(markerEntries(u.branch(next.id), u.all)).toEqual(u.branch(next.id));
  });

  it("the leaf already past the answer's checkpoint: unchanged", () => {
    const { t, doneCheckpoint } = twoRuns();
    const label = t.label(doneCheckpoint.id);
    expect(markerEntries(t.branch(doneCheckpoint.id), t.all)).toEqual(t.branch(doneCheckpoint.id));
    expect(markerEntries(t.branch(label.id), t.all)).toEqual(t.branch(label.id));
  });

  it("the first checkpoint written after the answer counts, and a stop handoff is never crossed", () => {
    const t = tree();
    const answer = t.assistant("answer", null);
    const first = t.checkpoint(sha);
    t.checkpoint(file, answer.id);
    expect(markerEntries([answer], t.all)).toEqual([answer, first]);
    const u = tree();
    const stopped = u.assistant("answer", null);
    u.note(STOP_HANDOFF);
    u.checkpoint(sha);
    expect(markerEntries([stopped], u.all)).toEqual([stopped]);
  });
});
