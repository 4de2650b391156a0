// Model-based, end to end: the generated shortest paths of the episode and
// resolution machines are replayed through a real Pi session. Each machine event is produced by
// the Pi action that produces it in the field (extension load/bind, commands, scripted faux turns,
// reopening a session file, session_shutdown), faults are real (a replaced file-only cohort), and
// after every step the observable behaviour is compared with a pure actor fed the same events:
// the episode the accessor reports, the active tools, the store files, the status text, the
// notices, and the context the faux model receives. The adapter's own actors are observed (not
// replaced) through runtime/flow-actor.ts, so the test also proves the adapter sends exactly the
// translated events: it holds no lifecycle flags of its own.

import { existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { afterAll, describe, expect, it, vi } from "vitest";
import { createActor, type AnyEventObject, type AnyMachineSnapshot } from "xstate";
import type { Context } from "@earendil-works/pi-ai";
import { episodeMachine } from "../../../machines/episode.ts";
import { type EpisodeMachineEvent, type EpisodeNoticeCode } from "../../../machines/episode-types.ts";
import { episodeStateName, isToolsActive, projectionMode } from "../../../machines/episode-queries.ts";
import { flattenValue } from "../../../machines/state-value.ts";
import {
  MAX_RESOLUTION_STEERS,
  isTerminalEligible,
  resolutionMachine,
  steersUsed,
  type ResolutionMachineEvent,
} from "../../../machines/resolution.ts";
import type { RestoreResult } from "../../../machines/restore.ts";
import { cwdKey, sessionKeyFromFile } from "../../../storage/layout.ts";
import { generatePaths } from "../../../machines/graph.ts";
import {
  EPISODE_EVENTS,
  RESPONSE_COMMITTED,
  RUN_ACCEPTED,
  RUN_ANNOUNCED,
  RUN_NOT_ACCEPTED,
  STORAGE_READY,
} from "../../support/alphabets.ts";
import { RESOLUTION_ALPHABET } from "../../support/run-alphabets.ts";
import { episodeWithPendingActors, resolutionWithPendingCommit } from "../../support/episode-stubs.ts";
import { PiHarness, call, contextText, say, type HarnessOptions, holdForeignLock } from "../../support/pi-harness.ts";

// ---- observing the adapter's actors ----------------------------------------------------------

interface Recorded {
  machine: string;
  events: AnyEventObject[];
  actor: { getSnapshot(): AnyMachineSnapshot };
}
const recorded = vi.hoisted(() => ({ actors: [] as Recorded[] }));

vi.mock(import("../../../runtime/flow-actor.ts"), async (importOriginal) => {
  const original = await importOriginal();
  const { createActor: create } = await import("xstate");
  type Inspected = { type: string; actorRef?: unknown; event?: AnyEventObject };
  return {
    ...original,
    // Same actor as production (same machine, same input); only an inspect observer is added. It
    // watches the actor's whole system, so the resolution actors the episode spawns are recorded too.
    createFlowActor: ((machine: { id: string }, options: { input?: unknown } = {}) => {
      const entries = new Map<unknown, Recorded>();
      const actor = create(
        machine as never,
        {
          ...(options.input === undefined ? {} : { input: options.input }),
          inspect: (ev: Inspected) => {
            // (the root actor's own creation is reported before `actor` is assigned: tell it by its logic)
            if (ev.type === "@xstate.actor") {
              const logic = (ev.actorRef as { logic?: { id?: string } }).logic;
              if (logic?.id !== "resolution" || machine.id === "resolution") return;
              const child = { machine: "resolution", events: [] as AnyEventObject[], actor: ev.actorRef } as Recorded;
              entries.set(ev.actorRef, child);
              recorded.actors.push(child);
              return;
            }
            // (the episode's invoked actors answer with their own done and error events: those are kept;
            // TOOLS_SYNCED, LOADED and PUBLICATION_OPENED carry the runtime's data and children into the
            // context, never a state change: not kept, and I1.18/I1.19 are the generated suite's)
            const type = ev.event?.type ?? "";
            if (ev.type !== "@xstate.event" || !ev.event || (type.startsWith("xstate.") && !EPISODE_RESULT.test(type)))
              return;
            if (type === "TOOLS_SYNCED" || type === "LOADED" || type === "PUBLICATION_OPENED") return;
            entries.get(ev.actorRef)?.events.push(ev.event);
          },
        } as never,
      );
      const entry = { machine: machine.id, events: [] as AnyEventObject[], actor } as unknown as Recorded;
      entries.set(actor, entry);
      recorded.actors.push(entry);
      return actor;
    }) as never,
  };
});

/** The episode's invoked actors' results (storage, restore, stop, discard), its run's end and the answer's commit. */
const EPISODE_RESULT = /^xstate\.(?:done|error)\.actor\.(?:storage|restore|stop|discard|run|commit)$/;

function latest(machine: string, since = 0): Recorded | undefined {
  for (let i = recorded.actors.length - 1; i >= since; i--)
    if (recorded.actors[i]!.machine === machine) return recorded.actors[i];
  return undefined;
}

const RESULT_TYPES = [
  "xstate.done.actor.storage",
  "xstate.error.actor.storage",
  "xstate.done.actor.restore",
  "xstate.error.actor.restore",
  "xstate.done.actor.stop",
  "xstate.error.actor.stop",
  "xstate.done.actor.discard",
  "xstate.error.actor.discard",
];

/** Event identity as the machine's guards see it (restore results by kind; revisions are world data). */
function eventKey(event: AnyEventObject): string {
  const e = event as unknown as {
    type: string;
    output: RestoreResult;
    reason: string;
    branch: string;
    ending: string;
    final: boolean;
  };
  if (e.type === "xstate.done.actor.restore") return `RESTORE_RESULT(${e.output.kind})`;
  if (e.type === "SESSION_START") return `SESSION_START(${e.reason},${e.branch})`;
  if (e.type === "DRAFT") return `DRAFT(${e.ending})`;
  if (e.type === "PATCH_ACCEPTED") return `PATCH_ACCEPTED(${e.final})`;
  if (e.type === "RUN_ANNOUNCED") {
    const { trigger, toolsMissing } = event as unknown as { trigger: { kind: string }; toolsMissing: boolean };
    return `RUN_ANNOUNCED(${trigger.kind}${toolsMissing ? ",tools missing" : ""})`;
  }
  if (e.type === "AGENT_START")
    return (event as { toolsMissing?: boolean }).toolsMissing ? "AGENT_START(tools missing)" : e.type;
  if (e.type === "xstate.done.actor.run")
    return `RUN_END(accepted=${(event as unknown as { output: { accepted: boolean } }).output.accepted})`;
  if (e.type === "xstate.error.actor.storage") return "xstate.error.actor.storage";
  if (e.type === "START") return (e as { adoptGit?: boolean }).adoptGit ? "START(adoptGit)" : "START";
  if (e.type === "SHUTDOWN") return (e as { unsaved?: boolean }).unsaved ? "SHUTDOWN(unsaved)" : "SHUTDOWN";
  if (e.type === "xstate.done.actor.discard")
    return (event as unknown as { output: string | null }).output === null ? "DISCARD(nothing)" : "DISCARD(removed)";
  return e.type;
}
const show = (events: readonly AnyEventObject[]) => events.map(eventKey).join(" → ") || "(no events)";

// ---- summary ------------------------------------------------------------------------------------

interface Summary {
  generated: number;
  distinct: number;
  replayed: number;
  steps: number;
  skipped: { path: string; reason: string }[];
  ms: number;
}
const summaries: Record<string, Summary> = {};
function summary(machine: string): Summary {
  return (summaries[machine] ??= { generated: 0, distinct: 0, replayed: 0, steps: 0, skipped: [], ms: 0 });
}
afterAll(() => {
  for (const [machine, s] of Object.entries(summaries)) {
    console.log(
      `[model-based/pi] ${machine}: shortest paths generated=${s.generated} ` +
        `distinct-after-prefix-dedupe=${s.distinct} ` +
        `replayed through Pi=${s.replayed} (steps=${s.steps}) skipped=${s.skipped.length} time=${Math.round(s.ms)}ms`,
    );
    for (const k of s.skipped) console.log(`  skipped ${k.path}: ${k.reason}`);
  }
});

/** Drops paths that are a strict prefix of another path: the longer replay observes every step of the shorter one. */
function dedupeByPrefix<T extends AnyEventObject>(paths: T[][]): T[][] {
  const keys = paths.map((p) => p.map((e) => JSON.stringify(e)));
  return paths.filter(
    (_, i) =>
      !keys.some((other, j) => j !== i && other.length > keys[i]!.length && keys[i]!.every((k, n) => k === other[n])),
  );
}

// ==== M1 episode ==================================================================================

const episodeAlphabet = EPISODE_EVENTS;

interface EpisodePath {
  autoStart: boolean;
  events: EpisodeMachineEvent[];
}

function episodePaths(): { generated: number; paths: EpisodePath[] } {
  let generated = 0;
  const paths: EpisodePath[] = [];
  for (const autoStart of [false, true]) {
    const shortest = generatePaths<EpisodeMachineEvent>(
      episodeMachine,
      { events: () => episodeAlphabet, serializeState: (s) => JSON.stringify(s.value), input: { autoStart } },
      { simple: false },
    ).filter((p) => p.kind === "shortest");
    generated += shortest.length;
    // The empty path (unbound) is kept although every path starts with it: it alone observes the
    // session before Pi binds the extension (tools must be off).
    const all = shortest.map((p) => p.events);
    for (const events of [...all.filter((e) => e.length === 0), ...dedupeByPrefix(all)])
      paths.push({ autoStart, events });
  }
  return { generated, paths };
}

/** Why a path cannot be produced through Pi (a fault that cannot be made real), or null. */
function episodeSkipReason(_path: EpisodePath): string | null {
  return null;
}

const NOTICE_TEXT: Record<EpisodeNoticeCode, RegExp> = {
  "not-enabled": /not enabled on this branch; nothing to stop/,
  "already-stopped": /^State Flow is already stopped on this branch; nothing to stop\. \/state-flow-start turns it/,
  "already-active": /already active on this branch/,
  "stop-refused-unproven": /cannot stop: this branch's provenance is unproven/,
  "start-refused-unproven": /cannot start: this branch's provenance is unproven/,
  "start-failed": /State Flow start failed: .* Nothing was enabled|could not initialize its store/,
  "adopted-into-git": /adopted this branch's file-only store into Git/,
  "adoption-failed": /could not adopt this branch's store into Git/,
  "stop-failed": /could not persist the stop/,
  "restore-lock-busy": /publication lock is held/,
  "restore-unproven": /could not prove this branch's revision/,
  "restore-unanchored": /older State Flow form that carries state or runtime config\/meta but names no revision/,
  "stop-refused-unanchored": /cannot stop: this branch holds no durable runtime to disable/,
  "tools-missing": /its tools are not active/,
  started: /^State Flow is on for this branch; its state is kept in /,
  stopped: /^State Flow is off for this branch: ordinary Pi from now on/,
  "fork-off": /^This session is a fork of a State Flow session that was stopped at the fork point/,
  forked: /^This session is a fork of a State Flow session: State Flow is on here, with its own copy/,
  "fork-unavailable": /^This session is a fork of a State Flow session, but State Flow could not copy/,
  "unsaved-removed": /^Pi did not save this session \(it ended before any conversation\), so it cannot be resumed: /,
  "unsaved-kept": /^Pi did not save this session, and State Flow could not remove the session state it had started/,
};

/** A prompt's run as the episode sees it: announced, its agent_start (a continuation), its end. */
const ACCEPTED_RUN: EpisodeMachineEvent[] = [RUN_ANNOUNCED, { type: "AGENT_START", toolsMissing: false }, RUN_ACCEPTED];
const ORDINARY_RUN: EpisodeMachineEvent[] = [
  RUN_ANNOUNCED,
  { type: "AGENT_START", toolsMissing: false },
  RUN_NOT_ACCEPTED,
];

/** Texts planted in setup sessions: raw user requests that some projections must never show. */
const PRE_FLOW = "PRE-FLOW RAW REQUEST";
const PRE_STOP = "PRE-STOP RAW REQUEST";
const PRE_RESTORE = "PRE-RESTORE RAW REQUEST";

/** One replay world: the harnesses (setup sessions first, the path's session last) and what was planted. */
class EpisodeWorld {
  readonly harnesses: PiHarness[] = [];
  h!: PiHarness;
  /** A storage initialization happened in this world (setup or path). */
  started = false;
  planted: string[] = [];
  stoppedText: string | null = null;
  private readonly pure;
  private readonly emitted: AnyEventObject[] = [];
  private adapterSeen = 0;
  private noticesSeen = 0;
  readonly trail: string[] = [];

  readonly path: EpisodePath;

  constructor(path: EpisodePath) {
    this.path = path;
    this.pure = createActor(episodeWithPendingActors, { input: { autoStart: path.autoStart } });
    this.pure.on("*", (e: AnyEventObject) => this.emitted.push(e));
    this.pure.start();
  }

  get state(): AnyMachineSnapshot {
    return this.pure.getSnapshot();
  }

  private async harness(options: HarnessOptions): Promise<PiHarness> {
    const first = this.harnesses[0];
    const h = await PiHarness.create({ ...options, ...(first ? { shareWith: first } : {}) });
    this.harnesses.push(h);
    return h;
  }

  /** A setup session that plants the branch the path's SESSION_START{branch} and RESTORE_RESULT need. */
  async plant(
    branch: "empty" | "unmarked" | "marked",
    restore: RestoreResult["kind"] | null,
    gitLater: boolean,
  ): Promise<string | undefined> {
    if (branch === "empty") return undefined;
    const fileOnly = restore === "unproven" || restore === "lockBusy" || gitLater;
    const s = await this.harness({
      sessionKind: "file",
      config: { autoStart: false },
      ...(fileOnly ? { git: false } : {}),
    });
    if (branch === "unmarked" || restore === "unanchored") {
      s.script(say("pre-flow answer"));
      await s.prompt(PRE_FLOW);
      this.planted.push(PRE_FLOW);
      // Spec 001: "an unanchored legacy semantic payload cannot be silently reduced to an
      // ordinary-disabled marker": an older version's state-bearing entry that names no revision.
      if (restore === "unanchored")
        s.session.sessionManager.appendCustomEntry("state-flow", { state: { session: { working: { old: 1 } } } });
      return s.session.sessionFile!;
    }
    await s.command("/state-flow-start");
    this.started = true;
    const request = restore === "passive" ? PRE_STOP : PRE_RESTORE;
    // Neither the state nor the answer repeats the raw request, so its absence from context is meaningful.
    s.script(call("patch_state", { session: { working: { planted: "fact" } }, final: true }), say("planted answer"));
    await s.prompt(request);
    this.planted.push(request);
    if (restore === "passive") {
      await s.command("/state-flow-stop");
      this.stoppedText = PRE_STOP;
    }
    if (restore === "lockBusy") {
      // Real fault: another writer holds the file-only store's publication lock while this branch
      // is restored; the selected revision is retained for retry (removed before a later restore).
      this.lockPath = join(s.storeRoot, ".state-flow-publication.lock");
      holdForeignLock(this.lockPath);
    }
    if (restore === "fork") {
      // Real fork: Pi copies the planted session into a new one (`pi --fork`), whose header names it as parent.
      const { SessionManager } = await import("@earendil-works/pi-coding-agent");
      return SessionManager.forkFrom(s.session.sessionFile!, s.cwd, s.sessionDir).getSessionFile()!;
    }
    if (restore === "unproven") {
      // Real fault: the planted session's own store files are deleted, so the file-only cohort its
      // branch names is gone (file-only stores keep no history). Another session's change to the
      // shared scopes would not do: a file-only checkpoint does not cover them.
      const file = s.session.sessionFile!;
      rmSync(join(s.storeRoot, cwdKey(s.cwd), sessionKeyFromFile(file)), { recursive: true, force: true });
    }
    return s.session.sessionFile!;
  }

  /** The path's own session: loaded but not yet bound, so `unbound` is observable. */
  async open(openFile: string | undefined, fileOnly: boolean): Promise<void> {
    const since = recorded.actors.length;
    this.h = await this.harness({
      config: { autoStart: this.path.autoStart },
      bind: false,
      ...(openFile ? { openFile } : {}),
      ...(fileOnly ? { git: false } : {}),
    });
    const adapter = latest("episode", since);
    expect(adapter, "the extension created its episode actor at load").toBeDefined();
    this.adapter = adapter!;
    this.noticesSeen = this.h.notices.length;
    this.check("load");
  }

  adapter!: Recorded;
  /** The publication lock another writer holds (lockBusy paths), until a later restore needs it gone. */
  lockPath: string | undefined;

  /** Runs one Pi action, feeds the expected machine events to the pure actor and checks everything. */
  async step(label: string, expected: EpisodeMachineEvent[], action: () => Promise<void>): Promise<void> {
    const before = episodeStateName(this.state as never);
    this.emitted.length = 0;
    await action();
    for (const e of expected) if (this.pure.getSnapshot().status === "active") this.pure.send(e);
    const sent = this.adapter.events.slice(this.adapterSeen);
    // A generated path may end in a transient state (restoring, starting) that Pi never leaves
    // observable: the adapter chains the effect's result event at once. Accept exactly such result
    // events, and feed them to the pure actor too, so both sides stay in step.
    while (this.state.hasTag("busy") && sent.length > expected.length) {
      const next = sent[expected.length] as EpisodeMachineEvent;
      expect(
        [
          "xstate.done.actor.restore",
          "xstate.done.actor.storage",
          "xstate.error.actor.storage",
          "xstate.done.actor.stop",
          "xstate.error.actor.stop",
          "xstate.done.actor.discard",
          "xstate.error.actor.discard",
        ],
        `only a result event may leave the transient ${episodeStateName(this.state as never)}`,
      ).toContain(next.type);
      expected = [...expected, next];
      this.pure.send(next);
    }
    this.adapterSeen = this.adapter.events.length;
    this.trail.push(`${label}: ${show(expected)}`);
    const where = `path [${show(this.path.events)}] (autoStart=${this.path.autoStart}) step "${label}" from ${before}`;
    expect(
      sent.map(eventKey),
      `the adapter sends exactly the translated events (no lifecycle flags of its own) — ${where}`,
    ).toEqual(expected.map(eventKey));
    if (
      this.state.matches("starting") ||
      expected.some((e) => e.type === "xstate.done.actor.storage" || e.type === "xstate.error.actor.storage")
    )
      this.started = true;
    this.check(where);
  }

  /** Observable invariants after a step. */
  check(where: string): void {
    const h = this.h;
    const s = this.state as never;
    const name = episodeStateName(s);
    expect(h.extensionErrors(), `no extension errors — ${where}`).toEqual([]);
    expect(h.loadErrors, `no load errors — ${where}`).toEqual([]);
    // State equality: the accessor reports what the pure machine reached with the same events.
    expect(h.accessor.episode(), `I1.1/I1.5/I1.11 the adapter's episode equals the machine's — ${where}`).toBe(name);
    expect(this.adapter.actor.getSnapshot().value, `I1.1 adapter actor snapshot — ${where}`).toEqual(
      (this.state as AnyMachineSnapshot).value,
    );
    // I1.1: tools active exactly in `active`. (Once closed, the extension no longer owns the session's tools:
    // Pi disposes the session, or a reload's new extension instance syncs them; a shutdown leaves them as they were.)
    const tools = h.activeTools;
    const active = isToolsActive(s);
    if (name !== "closed") {
      expect(
        tools.includes("patch_state") && tools.includes("read_state"),
        `I1.1 patch_state/read_state active iff ${name} is active — ${where}`,
      ).toBe(active);
      expect(
        tools.includes("patch_state") || tools.includes("read_state"),
        `I1.1 no State Flow tool outside active (${name}) — ${where}`,
      ).toBe(active);
    }
    // I1.2: store files exist only after a start; manual startup / resume while off is read-only.
    expect(
      existsSync(h.storeRoot),
      `I1.2 <agentDir>/state-flow exists iff a start initialized it (started=${this.started}) — ${where}`,
    ).toBe(this.started);
    // Status: detailed report and compact footer.
    const status = h.accessor.status();
    expect(status, `I1.1 status names the episode and the tool state — ${where}`).toContain(
      `episode: ${name}${active ? " (tools active)" : " (tools off)"}`,
    );
    const mode = projectionMode(s);
    const footer = h.statuses.length > 0 ? h.statuses[h.statuses.length - 1] : undefined;
    if (name === "unbound" || name === "closed") {
      // nothing bound yet / shut down: no footer owned by this step
    } else if (mode === "ordinary") expect(footer, `I1.2 off shows no State Flow footer — ${where}`).toBeUndefined();
    else if (mode === "passive") expect(footer, `I1.5 passive footer — ${where}`).toBe("state-flow stopped");
    else if (mode === "failedClosed") {
      expect(footer, `I1.11 failed-closed footer — ${where}`).toBe("state-flow unavailable");
      expect(status, `I1.11 failed inspection is reported unavailable, never clean — ${where}`).toMatch(
        /runtime: unavailable[\s\S]*Semantic materialization\n {2}unavailable/,
      );
    } else expect(footer, `I1.1 active footer is the compact step — ${where}`).toMatch(/^state-flow #\d+$/);
    if (mode === "active" || mode === "bootstrapHandoff" || mode === "bootstrapTranscript")
      expect(status, `I1.1 enabled runtime — ${where}`).toContain("enabled: yes");
    if (mode === "passive") expect(status, `I1.5 stop changed config only — ${where}`).toContain("enabled: no");
    // Notices: every notice the machine emitted reached the user, with its level.
    const fresh = h.notices.slice(this.noticesSeen);
    this.noticesSeen = h.notices.length;
    for (const e of this.emitted) {
      if (e.type !== "episode.notice") continue;
      const code = (e as unknown as { code: EpisodeNoticeCode }).code;
      expect(
        fresh.some((n) => NOTICE_TEXT[code].test(n.message)),
        `I1.8/I1.9/I1.11 notice ${code} shown to the user — ${where}; got ${JSON.stringify(fresh)}`,
      ).toBe(true);
    }
  }

  /** End-of-path probe: one user run in the final mode, asserting what the model receives. */
  async probe(): Promise<void> {
    const h = this.h;
    const s = this.state as never;
    const mode = projectionMode(s);
    const name = episodeStateName(s);
    const where = `probe of ${name} after [${show(this.path.events)}] (autoStart=${this.path.autoStart})`;
    if (name === "closed") {
      // I1.10: a closed episode accepts nothing more; a command changes nothing and creates nothing.
      // The adapter asks the machine: a finished episode gets no event, only a notice.
      await this.step("/state-flow-start after shutdown", [], () => h.command("/state-flow-start"));
      expect(h.accessor.episode(), `I1.10 closed stays closed — ${where}`).toBe("closed");
      return;
    }
    if (mode === "failedClosed") {
      // I1.16: a failed-closed branch runs no prompt: no inference, nothing of the branch reaches a model.
      const n = h.contexts.length;
      await this.step(`run "PROBE ${name}"`, [], () => h.prompt(`PROBE ${name}`));
      expect(h.contexts.length, `I1.16 no inference on a failed-closed branch — ${where}`).toBe(n);
      expect(h.lastNotice(), `I1.16 the refusal names the remedy — ${where}`).toMatchObject({
        level: "error",
        message: expect.stringMatching(/^State Flow did not run this prompt: it is failed closed/),
      });
      this.noticesSeen = h.notices.length;
      // I1.8: STOP and START fail visibly on an unproven branch and change nothing (I1.17: STOP alike
      // on an unanchored one, where START is the remedy the refusal names).
      await this.step("/state-flow-stop", [{ type: "STOP" }], () => h.command("/state-flow-stop"));
      if (name === "failedClosed.unanchored") {
        await this.step("/state-flow-start", [{ type: "START" }], () => h.command("/state-flow-start"));
        expect(h.accessor.episode(), `I1.17 the start establishes a fresh origin — ${where}`).toBe(
          "active.bootstrap.fromTranscript",
        );
        const m = h.contexts.length;
        h.script(call("patch_state", { session: { working: { probe: name } }, final: true }), say("after start"));
        await this.step('run "AFTER START"', ACCEPTED_RUN, () => h.prompt("AFTER START"));
        const text = contextText(h.contexts[m]!);
        expect(text, `I1.17 the earlier conversation migrates in one bootstrap run — ${where}`).toContain(PRE_FLOW);
        expect(text, `I1.17 the older entry's state is not imported — ${where}`).not.toContain('"old"');
        return;
      }
      await this.step("/state-flow-start", [{ type: "START" }], () => h.command("/state-flow-start"));
      expect(h.accessor.episode(), `I1.8 unproven stays failed-closed — ${where}`).toBe(name);
      return;
    }
    const n = h.contexts.length;
    const enabled = mode === "active" || mode === "bootstrapTranscript" || mode === "bootstrapHandoff";
    const request = `PROBE ${name}`;
    if (enabled) {
      h.script(
        call("patch_state", { session: { working: { probe: name } }, final: true }),
        say(`probe answer ${name}`),
      );
      await this.step(`run "${request}"`, ACCEPTED_RUN, () => h.prompt(request));
      expect(h.accessor.read(0, "session").state.response, `I1.7 the probe run was accepted — ${where}`).toBe(
        `probe answer ${name}`,
      );
    } else {
      h.script(say(`probe answer ${name}`));
      await this.step(`run "${request}"`, ORDINARY_RUN, () => h.prompt(request));
    }
    const context = h.contexts[n]!;
    const text = contextText(context);
    const toolNames = (context.tools ?? []).map((t) => t.name);
    const runtimeMessages = context.messages.filter(
      (m) => m.role === "user" && contextText({ messages: [m] } as Context).includes("## state[0] —"),
    );
    // The runtime context's volatile part may follow the run's trajectory as the last message.
    const volatileParts = context.messages.filter(
      (m) =>
        m.role === "user" &&
        /^(## state\[0\], continued|\(state\[0\] is)/.test(contextText({ messages: [m] } as Context).trimStart()),
    );
    expect(text, `the model receives the current request — ${where}`).toContain(request);
    if (enabled) {
      expect(toolNames, `I1.1 the model is offered patch_state in ${name} — ${where}`).toContain("patch_state");
      expect(context.systemPrompt, "I1.1 protocol in the system prompt " + `— ${where}`).toContain(
        "## State Flow protocol",
      );
      expect(runtimeMessages, `I1.1 exactly one runtime-context message with state[0] — ${where}`).toHaveLength(1);
      expect(context.messages[0], `I1.1 the runtime context comes first — ${where}`).toBe(runtimeMessages[0]);
      expect(volatileParts.length, `I1.1 at most one trailing volatile part — ${where}`).toBeLessThanOrEqual(1);
      if (volatileParts[0])
        expect(context.messages.at(-1), `I1.1 … and it comes last — ${where}`).toBe(volatileParts[0]);
    } else {
      expect(toolNames, `I1.1 no State Flow tool offered in ${name} — ${where}`).not.toContain("patch_state");
      expect(toolNames, `I1.1 no State Flow tool offered in ${name} — ${where}`).not.toContain("read_state");
      expect(context.systemPrompt ?? "", `I1.1 no protocol outside active — ${where}`).not.toContain(
        "## State Flow protocol",
      );
      expect(runtimeMessages, `I1.1 no runtime context outside active — ${where}`).toHaveLength(0);
    }
    if (mode === "bootstrapTranscript") {
      // (a migration run with nothing before it, a new empty session's, is not told about a migration)
      if (this.planted.length > 0)
        expect(text, `I1.6 the transcript bootstrap is marked — ${where}`).toContain("## Bootstrap");
      else expect(text, `I1.6 nothing to migrate, no bootstrap note — ${where}`).not.toContain("## Bootstrap");
      for (const planted of this.planted)
        expect(text, `I1.6 pre-Flow context present in the migration run — ${where}`).toContain(planted);
    }
    if (mode === "bootstrapHandoff") {
      expect(text, `I1.6 the handoff bootstrap is marked — ${where}`).toContain("## Bootstrap");
      expect(text, `I1.6 the frozen exit handoff is present — ${where}`).toContain("frozen exit handoff");
      expect(text, `I1.6 never the raw pre-stop transcript — ${where}`).not.toContain(this.stoppedText ?? "(none)");
    }
    if (mode === "passive") {
      expect(text, `I1.5 passive shows the frozen exit handoff — ${where}`).toContain("frozen exit handoff");
      expect(text, `I1.6 passive never shows the raw pre-stop request — ${where}`).not.toContain(
        this.stoppedText ?? "(none)",
      );
    }
    if (mode === "active") {
      for (const planted of this.planted)
        expect(text, "I1.7 steady: state + current run only, " + `no earlier raw request — ${where}`).not.toContain(
          planted,
        );
      expect(text, `I1.7 steady is not a bootstrap — ${where}`).not.toContain("## Bootstrap");
    }
    if (mode === "bootstrapTranscript" || mode === "bootstrapHandoff") {
      // I1.7: bootstrap lasts exactly one accepted run; the next run is steady.
      expect(h.accessor.episode(), `I1.7 one accepted run ends bootstrap — ${where}`).toBe("active.steady");
      const m = h.contexts.length;
      h.script(call("patch_state", { final: true }), say("steady answer"));
      await this.step('run "AFTER BOOTSTRAP"', ACCEPTED_RUN, () => h.prompt("AFTER BOOTSTRAP"));
      const next = contextText(h.contexts[m]!);
      expect(next, `I1.7 the pre-Flow/handoff context left the projection — ${where}`).not.toContain("## Bootstrap");
      expect(next, `I1.7 no frozen handoff after bootstrap — ${where}`).not.toContain("frozen exit handoff");
      for (const planted of [...this.planted, request])
        expect(next, `I1.7 earlier raw requests gone after bootstrap — ${where}`).not.toContain(planted);
    }
  }

  async dispose(): Promise<void> {
    this.pure.stop();
    for (const h of this.harnesses.reverse()) await h.dispose();
  }
}

/** Translates the path into Pi actions: each trigger event plus the result events the adapter produces for it. */
async function replayEpisode(path: EpisodePath): Promise<number> {
  const world = new EpisodeWorld(path);
  try {
    const events = path.events;
    const first = events[0];
    const restore = events[1]?.type === "xstate.done.actor.restore" ? events[1].output.kind : null;
    // A path that adopts a file-only store into Git starts without git on PATH; git is "installed" right
    // before that START.
    const adopts = events.some((e) => e.type === "START" && e.adoptGit === true);
    let openFile: string | undefined;
    if (first?.type === "SESSION_START") {
      if (first.reason !== "startup") throw new Error(`no Pi action mapped for ${eventKey(first)} as a first event`);
      openFile = await world.plant(first.branch, restore, adopts);
    }
    // (an unanchored branch starts file-only too: with git on PATH its restore opened a store that is
    // not a repository yet, so its /state-flow-start would be sent as START{adoptGit}, the same edge)
    const fileOnly = restore === "unproven" || restore === "lockBusy" || restore === "unanchored" || adopts;
    await world.open(openFile, fileOnly);
    let i = 0;
    let steps = 0;
    while (i < events.length) {
      const trigger = events[i]!;
      const group: EpisodeMachineEvent[] = [trigger];
      i++;
      while (i < events.length && RESULT_TYPES.includes(events[i]!.type)) group.push(events[i++]!);
      const h = world.h;
      steps++;
      // The other writer finishes before a restore this path expects to succeed.
      if (world.lockPath && group.some((e) => e.type === "xstate.done.actor.restore" && e.output.kind !== "lockBusy")) {
        rmSync(world.lockPath, { force: true });
        world.lockPath = undefined;
      }
      switch (trigger.type) {
        case "SESSION_START":
          // Pi emits session_start{startup} when the extension binds; the adapter chains the result itself.
          await world.step(`session_start(${trigger.reason}) on a ${trigger.branch} branch`, group, () => h.bind());
          break;
        case "START":
          if (trigger.adoptGit) {
            h.env.PATH = process.env.PATH;
            await world.step("git installed, then /state-flow-start", group, () => h.command("/state-flow-start"));
          } else {
            await world.step("/state-flow-start", group, () => h.command("/state-flow-start"));
          }
          break;
        case "STOP":
          if (group.some((e) => e.type === "xstate.error.actor.stop")) {
            // Real fault: another writer holds the store's publication lock while the stop is persisted.
            const lock = existsSync(join(h.storeRoot, ".git"))
              ? join(h.storeRoot, ".git", "state-flow-publication.lock")
              : join(h.storeRoot, ".state-flow-publication.lock");
            holdForeignLock(lock);
            await world
              .step("/state-flow-stop while another writer holds the lock", group, () => h.command("/state-flow-stop"))
              .finally(() => rmSync(lock, { force: true }));
          } else {
            await world.step("/state-flow-stop", group, () => h.command("/state-flow-stop"));
          }
          break;
        case "SHUTDOWN": {
          // Pi says a session is unsaved by its file: absent (an in-memory session, or one without a
          // conversation yet) for SHUTDOWN{unsaved}; a saved one is quit, an unsaved one reloaded (it goes on).
          const file = h.session.sessionFile;
          const saved = file !== undefined && existsSync(file);
          if (trigger.unsaved) {
            // Real fault where the path's session was opened from a saved file: the file is gone from disk.
            if (saved) rmSync(file, { force: true });
            await world.step("session_shutdown(quit) of an unsaved session", group, () => h.shutdown("quit"));
          } else {
            const label = saved ? "session_shutdown(quit) of a saved session" : "session_shutdown(reload)";
            await world.step(label, group, () => h.shutdown(saved ? "quit" : "reload"));
          }
          break;
        }
        default:
          throw new Error(`no Pi action mapped for trigger ${eventKey(trigger)} (group ${show(group)})`);
      }
    }
    if (world.state.matches("starting") || world.state.matches("restoring") || world.state.matches("discarding"))
      throw new Error(
        `path ends in the transient ${episodeStateName(world.state as never)}, which Pi never leaves observable`,
      );
    await world.probe();
    return steps;
  } catch (error) {
    if (error instanceof Error) error.message += `\n  replayed: ${world.trail.join(" | ")}`;
    throw error;
  } finally {
    await world.dispose();
  }
}

describe("M1 episode: generated shortest paths replayed through a real Pi session", () => {
  const { generated, paths } = episodePaths();
  const s = summary("episode");
  s.generated = generated;
  s.distinct = paths.length;
  it("generates a non-trivial set of shortest paths (both autoStart settings)", () => {
    expect(generated).toBeGreaterThanOrEqual(20);
    expect(paths.length).toBeGreaterThanOrEqual(8);
  });
  // The shortest path into discarding.said comes from a restored stop, whose session holds a transition, so
  // nothing is removed there: an explicit start's unsaved session, whose removal is said, is replayed too.
  const removalSaid: EpisodePath = {
    autoStart: false,
    events: [
      { type: "SESSION_START", reason: "startup", branch: "empty" },
      { type: "START" },
      STORAGE_READY,
      { type: "SHUTDOWN", unsaved: true },
    ],
  };
  for (const path of [...paths, removalSaid]) {
    const title = `autoStart=${path.autoStart}: ${show(path.events)}`;
    const reason = episodeSkipReason(path);
    if (reason) {
      s.skipped.push({ path: title, reason });
      it.skip(`${title} — skipped: ${reason}`, () => {});
      continue;
    }
    it(title, async () => {
      const t0 = performance.now();
      s.steps += await replayEpisode(path);
      s.replayed++;
      s.ms += performance.now() - t0;
    });
  }
});

// ==== M2 resolution ===============================================================================

const resolutionAlphabet = RESOLUTION_ALPHABET;

/** Why a resolution path cannot be produced through Pi, or null. */
function resolutionSkipReason(path: readonly ResolutionMachineEvent[]): string | null {
  const probe = createActor(resolutionWithPendingCommit).start();
  try {
    for (const event of path) {
      if (event.type === "xstate.error.actor.commit")
        return "a refused response commit needs the store to refuse a write mid-run, which the faux model cannot cause";
      probe.send(event);
    }
    return null;
  } finally {
    probe.stop();
  }
}

function resolutionPaths(): {
  generated: number;
  paths: ResolutionMachineEvent[][];
  skipped: { path: ResolutionMachineEvent[]; reason: string }[];
} {
  const shortest = generatePaths<ResolutionMachineEvent>(
    resolutionMachine,
    { events: () => resolutionAlphabet, serializeState: (s) => JSON.stringify(s.value) },
    { simple: false },
  ).filter((p) => p.kind === "shortest");
  const distinct = dedupeByPrefix(shortest.map((p) => p.events));
  const skipped = distinct.flatMap((path) => {
    const reason = resolutionSkipReason(path);
    return reason ? [{ path, reason }] : [];
  });
  return { generated: shortest.length, paths: distinct.filter((path) => !resolutionSkipReason(path)), skipped };
}

type ModelStep = {
  kind: "patch" | "final-only" | "text";
  step: (context: Context) => import("@earendil-works/pi-ai").AssistantMessage;
  events: ResolutionMachineEvent[];
  text?: string;
};

/**
 * Event → faux model turn. Every turn ends with Pi's turn_end (TURN_END); an explicit TURN_END in
 * the path is the one after the previous turn. A path that leaves the answer unresolved is
 * completed by a provider-error ending (an interrupted draft, a no-op by I2.4): Pi then settles the
 * run, and the run machine (M5) ends the answer with it.
 */
function translateRun(
  path: readonly ResolutionMachineEvent[],
  tag: string,
): { steps: ModelStep[]; completed: boolean } {
  const steps: ModelStep[] = [];
  let n = 0;
  for (const e of path) {
    n++;
    switch (e.type) {
      case "PATCH_ACCEPTED":
        steps.push({
          kind: "patch",
          step: call("patch_state", {
            session: { working: { [`${tag}-${n}`]: n } },
            ...(e.final ? { final: true } : {}),
          }),
          events: [e, { type: "TURN_END" }],
        });
        break;
      case "FINAL_ONLY":
        steps.push({
          kind: "final-only",
          step: call("patch_state", { final: true }),
          events: [e, { type: "TURN_END" }],
        });
        break;
      case "DRAFT": {
        const text = e.ending === "empty" ? "" : `${tag} draft ${n} (${e.ending})`;
        const stopReason = e.ending === "complete" || e.ending === "empty" ? "stop" : e.ending;
        steps.push({ kind: "text", step: say(text, stopReason), events: [e, { type: "TURN_END" }], text });
        break;
      }
      case "TURN_END": {
        const prev = steps[steps.length - 1];
        if (!prev || prev.events[prev.events.length - 1]!.type !== "TURN_END")
          throw new Error("TURN_END without a preceding turn");
        break; // the turn_end Pi already emits after that turn
      }
      case "xstate.done.actor.commit":
        break; // the commit Pi's turn_end starts: added after that TURN_END below
      case "PATCH_REJECTED":
      case "xstate.error.actor.commit":
        throw new Error(`${e.type} has no Pi action in this table (not on a shortest path)`);
    }
  }
  // A turn_end that commits the candidate is followed by that commit's success (the real store accepts it).
  const committing = createActor(resolutionWithPendingCommit).start();
  for (const s of steps) {
    const events: ResolutionMachineEvent[] = [];
    for (const e of s.events) {
      events.push(e);
      if (committing.getSnapshot().status === "active") committing.send(e);
      if (committing.getSnapshot().matches("committing")) {
        events.push(RESPONSE_COMMITTED);
        committing.send(RESPONSE_COMMITTED);
      }
    }
    s.events = events;
  }
  committing.stop();
  // Does the run stay open after the path? Replay purely to find out.
  const probe = createActor(resolutionWithPendingCommit).start();
  for (const s of steps) for (const e of s.events) if (probe.getSnapshot().status === "active") probe.send(e);
  const open = probe.getSnapshot().status === "active";
  probe.stop();
  if (open) {
    n++;
    steps.push({
      kind: "text",
      step: say(`${tag} interrupted ${n}`, "error"),
      events: [{ type: "DRAFT", ending: "error" }, { type: "TURN_END" }],
      text: `${tag} interrupted ${n}`,
    });
    return { steps, completed: true };
  }
  return { steps, completed: false };
}

function resolutionNoteFor(s: AnyMachineSnapshot): RegExp {
  if (isTerminalEligible(s as never)) return /## Resolution\nTerminal eligibility is latched/;
  const attempts = steersUsed(s as never);
  return attempts > 0
    ? new RegExp(`## Resolution\\n${attempts} answer\\(s\\) in this run were not accepted`)
    : /## Resolution\nThis run is not yet terminal-eligible/;
}

const customs = (h: PiHarness, type: string) =>
  h.session.messages.filter((m) => m.role === "custom" && (m as { customType: string }).customType === type);

async function replayRun(h: PiHarness, path: readonly ResolutionMachineEvent[], index: number): Promise<number> {
  const tag = `R${index}`;
  const { steps } = translateRun(path, tag);
  const where = `resolution path [${show(path)}] as faux turns ${steps.map((s) => show(s.events)).join(" | ")}`;
  // Pure actor fed the same events, turn by turn.
  const pure = createActor(resolutionWithPendingCommit);
  const emitted: AnyEventObject[][] = [];
  let current: AnyEventObject[] = [];
  pure.on("*", (e: AnyEventObject) => current.push(e));
  pure.start();
  const after: AnyMachineSnapshot[] = [];
  for (const s of steps) {
    current = [];
    for (const e of s.events) if (pure.getSnapshot().status === "active") pure.send(e);
    emitted.push(current);
    after.push(pure.getSnapshot());
  }
  const final = pure.getSnapshot();
  const expectedEvents = steps
    .flatMap((s) => s.events)
    .filter((_, i, all) => {
      // Events the adapter sends only while its actor is active (a settled run ignores the rest).
      const a = createActor(resolutionWithPendingCommit).start();
      for (const e of all.slice(0, i)) if (a.getSnapshot().status === "active") a.send(e);
      const active = a.getSnapshot().status === "active";
      a.stop();
      return active;
    });
  pure.stop();

  const responseBefore = h.accessor.read(0).state.response;
  const contextsBefore = h.contexts.length;
  const steersBefore = customs(h, "state-flow-resolution").length;
  const errorsBefore = h.notices.filter((n) => n.level === "error").length;
  const since = recorded.actors.length;
  h.script(...steps.map((s) => s.step));
  await h.prompt(`${tag} request`);
  expect(h.extensionErrors(), `no extension errors — ${where}`).toEqual([]);
  const adapter = latest("resolution", since);
  expect(adapter, `I2.1 one resolution actor per enabled run — ${where}`).toBeDefined();
  expect(
    recorded.actors.slice(since).filter((r) => r.machine === "resolution"),
    `I2.1 exactly one resolution actor for the run — ${where}`,
  ).toHaveLength(1);
  expect(adapter!.events.map(eventKey), `the adapter sends exactly the translated events — ${where}`).toEqual(
    expectedEvents.map(eventKey),
  );
  expect(
    flattenValue(adapter!.actor.getSnapshot().value),
    `I2.x adapter resolution state equals the machine's — ${where}`,
  ).toBe(flattenValue(final.value));

  // The context of each inference shows the resolution state reached by the previous turns.
  const contexts = h.contexts.slice(contextsBefore);
  expect(
    contexts,
    `I2.2 latching final:true never ends the turn: every scripted turn was an inference — ${where}`,
  ).toHaveLength(steps.length);
  expect(contextText(contexts[0]!), `I2.1 every enabled run starts ineligible with zero attempts — ${where}`).toMatch(
    /## Resolution\nThis run is not yet terminal-eligible/,
  );
  let steers = 0;
  for (let j = 1; j < contexts.length; j++) {
    const text = contextText(contexts[j]!);
    const state = after[j - 1]!;
    expect(
      text,
      `I2.2/I2.5 inference ${j} sees the resolution state ` + `${flattenValue(state.value)} — ${where}`,
    ).toMatch(resolutionNoteFor(state));
    for (const e of emitted[j - 1]!) {
      if (e.type === "resolution.steer") {
        steers++;
        expect(text, `I2.5 hidden steer ${steers} reaches the next inference — ${where}`).toContain(
          `[State Flow resolution ${(e as unknown as { attempt: number }).attempt}/${MAX_RESOLUTION_STEERS + 1}]`,
        );
      }
    }
    // Discarded and interrupted drafts never reach a later inference.
    for (let k = 0; k < j; k++) {
      const s = steps[k]!;
      if (s.kind === "text" && s.text && emitted[k]!.some((e) => e.type === "resolution.discardDraft")) {
        expect(text, `I2.4/I2.5 discarded draft "${s.text}" stays out of later inferences — ${where}`).not.toContain(
          s.text,
        );
      }
    }
  }
  // Steers: exactly those the machine emitted, hidden from the user.
  const steerMessages = customs(h, "state-flow-resolution").slice(steersBefore);
  const expectedSteers = emitted.flat().filter((e) => e.type === "resolution.steer").length;
  expect(
    steerMessages,
    `I2.5 one hidden steer per unresolved attempt 1..${MAX_RESOLUTION_STEERS} — ${where}`,
  ).toHaveLength(expectedSteers);
  expect(
    steerMessages.every((m) => (m as { display: boolean }).display === false),
    `I2.5 steers are hidden — ${where}`,
  ).toBe(true);
  expect(expectedSteers, `I2.5 steers never exceed ${MAX_RESOLUTION_STEERS} — ${where}`).toBeLessThanOrEqual(
    MAX_RESOLUTION_STEERS,
  );
  // Exhaustion: one concise error; committed state and enablement kept.
  const errors = h.notices.filter((n) => n.level === "error").slice(errorsBefore);
  if (final.matches("exhausted")) {
    expect(errors, `I2.5 the third unresolved attempt gives exactly one error — ${where}`).toHaveLength(1);
    expect(errors[0]!.message, `I2.5 exhaustion error — ${where}`).toMatch(
      /did not accept the answer: after 3 attempts the model still answered without calling patch_state/,
    );
  } else expect(errors, `I2.5 no error unless exhausted — ${where}`).toEqual([]);
  expect(h.accessor.episode(), `I2.5 enablement kept — ${where}`).toBe("active.steady");
  expect(h.activeTools, `I2.5 tools kept — ${where}`).toContain("patch_state");
  // Response: committed exactly once at turn_end of an eligible complete draft, else unchanged.
  const response = h.accessor.read(0).state.response;
  if (final.matches("accepted")) {
    const candidate = [...steps].reverse().find((s) => s.kind === "text")!;
    expect(response, `I2.6/I2.7 the eligible complete draft is the response — ${where}`).toBe(candidate.text);
    expect(h.accessor.read(1).state.response, `I2.6 one response transition — ${where}`).toBe(responseBefore);
  } else {
    expect(
      response,
      "I2.4/I2.6 no response without an accepted answer " + `(${flattenValue(final.value)}) — ${where}`,
    ).toBe(responseBefore);
  }
  return steps.length;
}

describe("M2 resolution: generated shortest paths replayed as runs of a real Pi session", () => {
  const { generated, paths, skipped } = resolutionPaths();
  const s = summary("resolution");
  s.generated = generated;
  s.distinct = paths.length + skipped.length;
  for (const { path, reason } of skipped) {
    s.skipped.push({ path: show(path), reason });
    it.skip(`${show(path)} — skipped: ${reason}`, () => {});
  }
  it("generates the shortest paths to every resolution state", () => {
    expect(generated).toBeGreaterThanOrEqual(8);
    // (every shortest path is a prefix of the one to `exhausted` or to `accepted`; `uncommitted` is skipped)
    expect(paths.length).toBeGreaterThanOrEqual(2);
  });
  it(`replays ${paths.length} runs (one enabled run per path) in one session`, async () => {
    const t0 = performance.now();
    const h = await PiHarness.create({ config: { autoStart: true } });
    try {
      expect(h.accessor.episode()).toBe("active.steady");
      let index = 0;
      for (const path of paths) {
        s.steps += await replayRun(h, path, ++index);
        s.replayed++;
      }
    } finally {
      await h.dispose();
      s.ms += performance.now() - t0;
    }
  });
});
