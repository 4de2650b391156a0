import type { SessionEntry } from "@earendil-works/pi-coding-agent";
import { describe, expect, it } from "vitest";
import {
  CHECKPOINT_ENTRY,
  DISCARDED_ENTRY,
  branchMarkers,
  branchShape,
  discardedDrafts,
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

  it(
    "a disabled marker after this session's stop handoff " + "restores passive; another session's is plain disabled",
    () => {
      expect(branchMarkers([handoff("S"), checkpoint({ disabled: true })], "S")).toEqual([
        { kind: "disabled", stoppedBy: "S" },
      ]);
      expect(branchMarkers([handoff("PARENT"), checkpoint({ disabled: true })], "S")).toEqual([{ kind: "disabled" }]);
    },
  );
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
