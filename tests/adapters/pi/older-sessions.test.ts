// Sessions older State Flow versions recorded, opened in a real Pi session (issue 25). Every
// fixture is written by hand from the spec 001 sentence its test names: the Pi branch entries an
// older version appended, and the store it left. Each restores or migrates once and says so, keeps
// its history where 001 keeps it, and fails closed with a named reason only where 001 says it must;
// after each, a prompt runs (or, failed closed, doing what the refusal says makes it run).
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CHECKPOINT_ENTRY } from "../../../adapters/pi/branch.ts";
import { parsePatchSet } from "../../../storage/core/cohort.ts";
import { sessionIdentity } from "../../../runtime/session-identity.ts";
import { scopeFiles } from "../../../storage/layout.ts";
import { openStore } from "../../../storage/open-store.ts";
import { StateStore, type BranchState, type SessionIdentity } from "../../../storage/state-store.ts";
import { call, contextText, harnessFactory, say, type PiHarness } from "../../support/pi-harness.ts";

const harness = harnessFactory();

const EARLIER = "EARLIER REQUEST BEFORE THIS VERSION";

/** A file-backed Pi session holding one ordinary exchange (an older version's conversation). */
async function olderSession() {
  const h = await harness({ sessionKind: "file" });
  h.script(say("an earlier answer"));
  await h.prompt(EARLIER);
  return { h, file: h.session.sessionManager.getSessionFile()!, id: sessionIdentity(h.cwd, h.session.sessionManager) };
}

/** The store as this session's runtime left it: two transitions over all three scopes (current formats). */
async function storeWithState(h: PiHarness, id: SessionIdentity) {
  const store = new StateStore(await openStore({ root: h.storeRoot, env: h.env, initGit: true }), id);
  let runtime: BranchState = await store.start(null, "turn-end");
  const steps = [
    {
      global: { contract: { tone: "terse" } },
      cwd: { contract: { build: "make" } },
      session: { working: { step: 1 } },
    },
    { session: { working: { step: 2 } } },
  ];
  for (const step of steps) runtime = (await store.commit(runtime, parsePatchSet(step).patches, "older")).runtime;
  return runtime;
}

const append = (h: PiHarness, data: unknown) => h.session.sessionManager.appendCustomEntry(CHECKPOINT_ENTRY, data);
const reopen = (h: PiHarness, file: string) => harness({ shareWith: h, openFile: file });
const gitIn = (h: PiHarness, ...args: string[]) =>
  execFileSync("git", ["-C", h.storeRoot, ...args], { env: h.env, encoding: "utf8" });
/** The data of the branch's State Flow checkpoint entries, oldest first. */
const checkpoints = (h: PiHarness) =>
  h.session.sessionManager
    .getBranch()
    .flatMap((e) => (e.type === "custom" && e.customType === CHECKPOINT_ENTRY ? [e.data] : []));
const said = (h: PiHarness) => h.notices.map((n) => n.message).join("\n");

/** One enabled run: the model patches and answers; returns the context it received. */
async function enabledRun(h: PiHarness, step: number) {
  const n = h.contexts.length;
  h.script(call("patch_state", { session: { working: { step } }, final: true }), say(`step ${step} done`));
  await h.prompt(`continue with step ${step}`);
  expect(h.accessor.read(0, "session").state).toMatchObject({ working: { step }, response: `step ${step} done` });
  return contextText(h.contexts[n]!);
}

describe("older Pi checkpoint entries (001 Runtime ownership)", () => {
  // "Older config/meta and state-bearing checkpoints remain read-only compatibility input."
  it("{revision, config, meta}: restores through its revision; the copied config/meta are not read", async () => {
    const { h, file, id } = await olderSession();
    const runtime = await storeWithState(h, id);
    const revision = runtime.pointer.revision;
    append(h, {
      revision,
      config: { version: 1, enabled: false, remotePublication: "off" },
      meta: { counters: { transitions: 40, runs: 40 }, lineage: { id: "l-old", originStep: 0, window: [] } },
    });
    const r = await reopen(h, file);
    expect(r.accessor.episode(), "the entry's enabled:false is not read").toBe("active.steady");
    expect(r.accessor.read(1, "session").state.working, "its history is the revision's").toEqual({ step: 1 });
    expect(said(r)).toContain("from an older State Flow checkpoint entry: only its revision was read");
    expect(checkpoints(r).at(-1), "the branch records the current form").toEqual({
      revision,
      boundary: { id: expect.any(String), step: expect.any(Number) },
    });
    const context = await enabledRun(r, 3);
    expect(context).toContain("terse");
    const again = await reopen(h, file);
    expect(again.accessor.episode()).toBe("active.steady");
    expect(said(again), "said once").not.toContain("older State Flow checkpoint entry");
  });

  // Same sentence, the state-bearing form: the copied state is never trusted as state.
  it("{revision, state}: restores through its revision; the copied state never reaches the model", async () => {
    const { h, file, id } = await olderSession();
    const runtime = await storeWithState(h, id);
    append(h, { revision: runtime.pointer.revision, state: { session: { working: { copied: "STALE COPY" } } } });
    const r = await reopen(h, file);
    expect(r.accessor.read(0, "session").state.working).toEqual({ step: 2 });
    const context = await enabledRun(r, 3);
    expect(context).not.toContain("STALE COPY");
  });

  // "Legacy checkpoint syntax and immutable targets undergo the same fallback checks."
  it("an older entry naming a missing revision falls back to the previous one, and says what it skipped", async () => {
    const { h, file, id } = await olderSession();
    const runtime = await storeWithState(h, id);
    append(h, { revision: runtime.pointer.revision, config: { enabled: true } });
    append(h, { revision: "0".repeat(40), config: { enabled: true }, meta: {} });
    const r = await reopen(h, file);
    expect(r.accessor.episode()).toBe("active.steady");
    expect(said(r)).toMatch(/not the newest checkpoint of this branch: 1 newer checkpoint entry could not be loaded/);
    await enabledRun(r, 3);
  });

  // "...while an unanchored legacy semantic payload cannot be silently reduced to an ordinary-disabled
  // marker", and "Explicit start on a pre-runtime branch establishes an empty session origin".
  it("state and config/meta without a revision: fails closed by name; /state-flow-start, as said, works", async () => {
    const { h, file } = await olderSession();
    append(h, { disabled: true });
    append(h, {
      config: { enabled: true },
      meta: { counters: { transitions: 3, runs: 3 } },
      state: { session: { working: { copied: "UNANCHORED COPY" } } },
    });
    const r = await reopen(h, file);
    expect(r.accessor.episode(), "never reduced to the older disabled marker").toBe("failedClosed.unanchored");
    expect(said(r)).toContain("names no revision, so nothing in the store proves it");
    expect(r.accessor.status()).toContain("an older form carrying config, meta, state but no revision");
    const n = r.contexts.length;
    await r.prompt("a prompt on the unanchored branch");
    expect(r.contexts.length, "no prompt runs while failed closed").toBe(n);
    expect(r.lastNotice()?.message).toMatch(/did not run this prompt.*Run \/state-flow-start to establish an empty/);
    await r.command("/state-flow-stop");
    expect(r.lastNotice()?.message).toContain("cannot stop: this branch holds no durable runtime");
    await r.command("/state-flow-start");
    expect(r.accessor.episode()).toBe("active.bootstrap.fromTranscript");
    const context = await enabledRun(r, 1);
    expect(context, "the earlier conversation migrates once").toContain(EARLIER);
    expect(context, "the older entry is not imported").not.toContain("UNANCHORED COPY");
    const again = await reopen(h, file);
    expect(again.accessor.episode()).toBe("active.steady");
    expect(again.accessor.read(0, "session").state.working).toEqual({ step: 1 });
  });

  it("an older stop ({config:{enabled:false}}, no state) is an ordinary disabled branch: prompts run", async () => {
    const { h, file } = await olderSession();
    append(h, { config: { enabled: false }, meta: { counters: { transitions: 2, runs: 2 } } });
    const r = await reopen(h, file);
    expect(r.accessor.episode()).toBe("off");
    r.script(say("ordinary"));
    await r.prompt("an ordinary prompt");
    expect(r.contexts).toHaveLength(1);
    expect(existsSync(r.storeRoot), "restoring a disabled branch writes nothing").toBe(false);
  });
});

const json = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;

describe("older stores a branch names (001 Existing stores and migration)", () => {
  // "An existing current state.json becomes the initial checkpoint state ... Its explanatory old
  // journal is not replayed", and "revision-linked predecessor snapshots have a one-way restoration
  // path. ... Historical legacy restoration reads only the authoritative current snapshots".
  it("a revision holding a predecessor's state.json restores once, migrated, with that revision kept", async () => {
    const { h, file, id } = await olderSession();
    const states = {
      global: { artifacts: {}, contract: { tone: "terse" }, working: {}, response: "" },
      cwd: { artifacts: {}, contract: { build: "make" }, working: {}, response: "" },
      session: { artifacts: {}, contract: {}, working: { step: 5 }, response: "five" },
    };
    for (const scope of ["global", "cwd", "session"] as const) {
      const dir = join(h.storeRoot, scopeFiles(scope, id).dir);
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, "state.json"), json(states[scope]));
    }
    writeFileSync(join(h.storeRoot, scopeFiles("session", id).dir, "journal.jsonl"), "{ not json: never replayed\n");
    gitIn(h, "init", "-q");
    gitIn(h, "add", "-A");
    gitIn(h, "commit", "-q", "-m", "predecessor");
    const revision = gitIn(h, "rev-parse", "HEAD").trim();
    append(h, { revision, config: { enabled: true }, meta: { counters: { transitions: 5, runs: 5 } } });

    const r = await reopen(h, file);
    expect(r.accessor.episode()).toBe("active.steady");
    expect(said(r)).toContain("migrated the legacy state.json of the global, cwd, session scope(s)");
    expect(said(r)).toContain(`restored this branch from an older version's state.json snapshot (revision`);
    const head = gitIn(h, "rev-parse", "HEAD").trim();
    expect(checkpoints(r).at(-1), "the replacement pointer").toEqual({
      revision: head,
      boundary: { id: expect.any(String), step: expect.any(Number) },
    });
    expect(r.accessor.read(0, "session").state).toEqual(states.session);
    expect(() => r.accessor.read(1), "no history is fabricated before the origin").toThrow(/before this lineage/);
    expect(gitIn(h, "show", `${revision}:${scopeFiles("session", id).dir}/state.json`), "kept in Git").toBe(
      json(states.session),
    );
    expect(existsSync(join(h.storeRoot, "state.json")), "one authoritative format").toBe(false);
    const context = await enabledRun(r, 6);
    expect(context).toContain("terse");
    const again = await reopen(h, file);
    expect(said(again), "once").not.toMatch(/migrated|state\.json snapshot/);
    expect(again.accessor.read(0, "session").state.working).toEqual({ step: 6 });
  });

  const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

  /** The store moved into the pre-0.4 layout ("appended SHA-256 suffixes") and committed. */
  function toPreFour(h: PiHarness, id: SessionIdentity): string {
    const cwdDir = `${id.cwdKey}-${sha256(id.cwd)}`;
    gitIn(h, "mv", "--", id.cwdKey, cwdDir);
    gitIn(h, "mv", "--", `${cwdDir}/${id.sessionKey}`, `${cwdDir}/${id.sessionKey}-${sha256(id.sessionId)}`);
    gitIn(h, "commit", "-q", "-m", "pre-0.4 layout");
    return cwdDir;
  }

  // "if the selected layout is current HEAD, startup adopts its CWD/session files into Pi-native paths
  // with compare-and-swap publication, rollback, and an immediate replacement revision pointer."
  it("the pre-0.4 layout at HEAD is adopted at startup, once, with its hot history intact", async () => {
    const { h, file, id } = await olderSession();
    await storeWithState(h, id);
    const cwdDir = toPreFour(h, id);
    const revision = gitIn(h, "rev-parse", "HEAD").trim();
    append(h, { revision });
    const r = await reopen(h, file);
    expect(r.accessor.episode()).toBe("active.steady");
    expect(said(r)).toContain("moved this session's pre-0.4 store layout");
    const head = gitIn(h, "rev-parse", "HEAD").trim();
    expect(checkpoints(r).at(-1)).toEqual({
      revision: head,
      boundary: { id: expect.any(String), step: expect.any(Number) },
    });
    expect(r.accessor.read(1, "session").state.working, "hot history intact").toEqual({ step: 1 });
    expect(gitIn(h, "ls-files", "--", cwdDir)).toBe("");
    await enabledRun(r, 3);
    const again = await reopen(h, file);
    expect(said(again), "once").not.toContain("pre-0.4");
    expect(again.accessor.read(3, "session").state.working, "patch, answer, then the adopted steps").toEqual({
      step: 1,
    });
  });

  // "The untagged pre-0.4 development layout ... remains readable at its historical Git revisions."
  it("a pre-0.4 revision older than HEAD is read where it is; its next transition is Pi-native", async () => {
    const { h, file, id } = await olderSession();
    await storeWithState(h, id);
    const cwdDir = toPreFour(h, id);
    const revision = gitIn(h, "rev-parse", "HEAD").trim();
    gitIn(h, "commit", "-q", "--allow-empty", "-m", "another pre-0.4 commit");
    append(h, { revision });
    const r = await reopen(h, file);
    expect(r.accessor.episode()).toBe("active.steady");
    expect(said(r)).toContain("is older and is read as it is there");
    expect(r.accessor.read(1, "session").state.working).toEqual({ step: 1 });
    await enabledRun(r, 3);
    expect(gitIn(h, "ls-files", "--", cwdDir)).toBe("");
    expect(r.accessor.read(0, "cwd").state.contract).toEqual({ build: "make" });
  });

  // 001 "Runtime ownership": "Conflicts fail rather than silently selecting another scope"; the
  // adoption is a compare-and-swap of one layout into the other, so two copies fail closed by name.
  it("the pre-0.4 layout beside a Pi-native copy fails closed by name; resolving it as told restores", async () => {
    const { h, file, id } = await olderSession();
    await storeWithState(h, id);
    toPreFour(h, id);
    const revision = gitIn(h, "rev-parse", "HEAD").trim();
    gitIn(h, "checkout", "-q", "HEAD~1", "--", id.cwdKey);
    gitIn(h, "commit", "-q", "-m", "a Pi-native copy too");
    append(h, { revision });
    const r = await reopen(h, file);
    expect(r.accessor.episode()).toBe("failedClosed.unproven");
    expect(r.accessor.status()).toMatch(/older State Flow store form, which could not be restored: .* both exist/);
    gitIn(h, "rm", "-q", "-r", "--", id.cwdKey);
    gitIn(h, "commit", "-q", "-m", "keep one layout");
    const again = await reopen(h, file);
    expect(again.accessor.episode()).toBe("active.steady");
    await enabledRun(again, 3);
  });
});
