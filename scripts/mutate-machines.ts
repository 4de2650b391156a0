// npm run mutate:machines: checks that the test suites notice plausible single mistakes in the
// machines (MUTANTS, owned by the generated suites in tests/machines) and on the runtime/effect side
// (RUNTIME_MUTANTS in scripts/mutants-runtime.ts: the actors and effects the machines invoke, each
// owned by the suite of its module, e.g. tests/runtime/publication.test.ts). Each mutant is one
// exact text replacement in one source file; it is applied to a private copy of the repository and
// the suite that owns it (its `suite`, default tests/machines) runs there (`-- <id> ...` runs only
// those). A mutant is caught when at least one test fails, survived when all pass. Each suite also
// runs unmutated first. Exits 1 if any mutant survived, or if one could not be judged (an unmutated
// suite failing, a mutant that no longer loads, a timeout), since then "caught" would prove nothing.
import { readFileSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { PARALLEL, applyMutant, copyRepo, judge, pool, suiteOf, type Job, type Mutant } from "./mutant.ts";
import { RUNTIME_MUTANTS } from "./mutants-runtime.ts";

export { applyMutant, occurrences, type Mutant } from "./mutant.ts";
export { RUNTIME_MUTANTS };

/** The machine mutants: each owned by tests/machines (the default suite). */
export const MUTANTS: readonly Mutant[] = [
  // resolution
  {
    id: "resolution-three-steers",
    file: "machines/resolution.ts",
    from: "export const resolutionMachine = createResolutionMachine(MAX_RESOLUTION_STEERS);",
    to: "export const resolutionMachine = createResolutionMachine(3);",
    why: "the production machine is built with a budget of three hidden steers instead of two",
  },
  {
    id: "resolution-budget-constant",
    file: "machines/resolution.ts",
    from: "export const MAX_RESOLUTION_STEERS = 2;",
    to: "export const MAX_RESOLUTION_STEERS = 3;",
    why: "the budget constant itself drifts (anything reading it moves along)",
  },
  {
    id: "resolution-interrupted-never",
    file: "machines/resolution.ts",
    from: 'isInterruptedDraft: ({ event }) => event.type === "DRAFT" && event.ending !== "complete",',
    to: "isInterruptedDraft: () => false,",
    why: "aborted, length-limited, error and empty endings count as attempted answers",
  },
  {
    id: "resolution-steer-attempt-number",
    file: "machines/resolution.ts",
    from: '{ type: "steerHiddenSameRun", params: { attempt: n + 1 } },',
    to: '{ type: "steerHiddenSameRun", params: { attempt: n } },',
    why: "a hidden steer names the wrong attempt (off by one)",
  },
  {
    id: "resolution-exhausted-attempts",
    file: "machines/resolution.ts",
    from: '{ type: "reportExhausted", params: { attempts: n + 1 } },',
    to: '{ type: "reportExhausted", params: { attempts: n } },',
    why: "the exhaustion error reports one attempt too few",
  },
  {
    id: "resolution-final-only-ignored",
    file: "machines/resolution.ts",
    from: 'FINAL_ONLY: { target: "eligible" },',
    to: "FINAL_ONLY: {},",
    why: "a final-only patch no longer latches terminal eligibility",
  },
  // episode
  {
    id: "episode-passive-tree-no-refreeze",
    file: "machines/episode.ts",
    from: 'TREE: { actions: ["seedSpecification", "freezeHandoff"] },',
    to: 'TREE: { actions: ["seedSpecification"] },',
    why: "/tree while passive keeps the handoff frozen at the old position",
  },
  {
    id: "episode-stop-persisted-no-freeze",
    file: "machines/episode.ts",
    from: 'onDone: { target: "passive", actions: ["freezeHandoff", "reportStopped"] },',
    to: 'onDone: { target: "passive", actions: ["reportStopped"] },',
    why: "passive begins without freezing the exit handoff",
  },
  {
    id: "episode-retain-revision-noop",
    file: "machines/episode.ts",
    from: "retainRevision: assign({ retained: ({ event }) => retainedOf(event) }),",
    to: "retainRevision: () => {},",
    why: "a failed-closed branch forgets the pointer it could not restore",
  },
  {
    id: "episode-retained-kind-lost",
    file: "machines/episode-types.ts",
    from: "    kind: result.kind,\n",
    to: '    kind: "unproven" as const,\n',
    why: "a busy lock is retained as if the pointer were unproven",
  },
  {
    id: "episode-restore-keeps-pointer",
    file: "machines/episode.ts",
    from: '{ guard: "restoredRevision", target: "#episode.active.steady", actions: ["clearRetainedRevision"] },',
    to: '{ guard: "restoredRevision", target: "#episode.active.steady" },',
    why: "a successful retry leaves the failed pointer retained on an active branch",
  },
  {
    id: "episode-from-off-skips-bootstrap",
    file: "machines/episode.ts",
    from: 'onDone: { target: "#episode.active.bootstrap.fromTranscript", actions: ["reportStarted"] },',
    to: 'onDone: { target: "#episode.active.steady", actions: ["reportStarted"] },',
    why: "a mid-conversation start drops the pre-Flow transcript instead of migrating it",
  },
  {
    id: "episode-failed-restart-leaves-passive",
    file: "machines/episode.ts",
    from: 'onError: { target: "#episode.passive", actions: ["reportStartFailed"] },',
    to: 'onError: { target: "#episode.off", actions: ["reportStartFailed"] },',
    why: "a restart after stop that cannot open storage loses the frozen handoff",
  },
  {
    id: "episode-failed-stop-forgets-bootstrap",
    file: "machines/episode.ts",
    from: 'onError: { target: "#episode.active.hist", actions: ["reportStopFailed"] },',
    to: 'onError: { target: "#episode.active.steady", actions: ["reportStopFailed"] },',
    why: "a stop that cannot be persisted skips the bootstrap it interrupted",
  },
  {
    id: "episode-bootstrap-ends-unaccepted",
    file: "machines/episode.ts",
    from: '"xstate.done.actor.run": { guard: "runAccepted", target: "steady", actions: ["runEnded", "recordCarried"] }',
    to: '"xstate.done.actor.run": { target: "steady", actions: ["runEnded", "recordCarried"] }',
    why: "a run whose answer was not committed still ends the migration run: the pre-Flow context is dropped unsaved",
  },
  {
    id: "resolution-commit-error-accepted",
    file: "machines/resolution.ts",
    from: 'onError: { target: "uncommitted", actions: ["reportCommitFailed"] },',
    to: 'onError: { target: "accepted" },',
    why: "a response the store refused counts as accepted, silently (the defect the invoked commit fixed)",
  },
  {
    id: "resolution-commit-skipped",
    file: "machines/resolution.ts",
    from: 'TURN_END: { target: "committing" },',
    to: 'TURN_END: { target: "accepted" },',
    why: "turn_end accepts the answer without committing it to response",
  },
  {
    id: "episode-tools-registered-every-activation",
    file: "machines/episode.ts",
    from: 'if (!check("toolsNotRegistered")) return;',
    to: "",
    why: "an effect run twice: the tools are registered with Pi again on every activation",
  },
  {
    id: "episode-restore-error-forgets-reason",
    file: "machines/episode.ts",
    from: 'onError: { target: "#episode.failedClosed.unproven", actions: ["retainRevision", "reportUnproven"] },',
    to: 'onError: { target: "#episode.failedClosed.unproven", actions: ["reportUnproven"] },',
    why: "a restore that failed outright fails closed without keeping the store's reason (status and refusal go blank)",
  },
  {
    id: "resolution-commit-input-lost",
    file: "machines/resolution.ts",
    from: 'input: ({ context }) => ({ text: context.candidate ?? "" }),',
    to: 'input: () => ({ text: "" }),',
    why: "the commit actor is handed an empty answer instead of the eligible draft's text",
  },
  {
    id: "episode-stop-error-silent",
    file: "machines/episode.ts",
    from: 'onError: { target: "#episode.active.hist", actions: ["reportStopFailed"] },',
    to: 'onError: { target: "#episode.active.hist" },',
    why: "a stop the store refused is dropped without a word: the person believes State Flow stopped",
  },
  {
    id: "episode-adoption-error-said-as-success",
    file: "machines/episode.ts",
    from: 'onError: { target: "#episode.active.hist", actions: ["reportAdoptionFailed"] },',
    to: 'onError: { target: "#episode.active.hist", actions: ["reportAdopted"] },',
    why: "a failed adoption into Git is announced as done",
  },
  {
    id: "episode-restore-error-undrawn",
    file: "machines/episode.ts",
    from: 'onError: { target: "#episode.failedClosed.unproven", actions: ["retainRevision", "reportUnproven"] },',
    to: "",
    why: "a restore whose store cannot be read leaves the branch stuck in restoring (the error is not drawn)",
  },
  {
    id: "episode-start-origin-from-frozen",
    file: "machines/episode.ts",
    from: "input: { fromFrozen: true },",
    to: "input: { fromFrozen: false },",
    why: "a restart after stop starts a new origin instead of the frozen stop boundary",
  },
  {
    id: "episode-lock-busy-stop-skips-retry",
    file: "machines/episode.ts",
    from: 'STOP: { target: "#episode.restoring.retryStop" },',
    to: 'STOP: { target: "#episode.restoring.branch" },',
    why: "STOP after a busy lock restores the branch and then forgets to stop",
  },
  {
    id: "episode-enabled-run-ordinary",
    file: "machines/episode.ts",
    from: '{ guard: "toolsPresent", actions: ["endRun", "spawnEquippedRun"] },',
    to: '{ guard: "toolsPresent", actions: ["endRun", "spawnOrdinaryRun"] },',
    why: "a prompt on an enabled branch with its tools active runs as ordinary Pi: nothing resolved or projected",
  },
  {
    id: "episode-active-exit-keeps-run",
    file: "machines/episode.ts",
    from: 'exit: ["endRun"],',
    to: "exit: [],",
    why: "the run's actor outlives the active branch (steering and resolving on a stopped branch)",
  },
  {
    id: "episode-fork-like-resume",
    file: "machines/episode.ts",
    from: '{ guard: "restoredFork", target: "#episode.starting.fromFork"',
    to: '{ guard: "restoredFork", target: "#episode.active.steady"',
    why: "a fork is bound to its parent's pointer (the parent's state as its own) instead of writing its own copy",
  },
  {
    id: "episode-autostart-ignores-config",
    file: "machines/episode.ts",
    from: "autoStartNewSession: ({ context, event }) => context.autoStart && isGenuinelyNewSession(event),",
    to: "autoStartNewSession: ({ event }) => isGenuinelyNewSession(event),",
    why: "a new session initializes storage although autoStart is off",
  },
  // publication
  {
    id: "publication-pushed-always",
    file: "machines/publication.ts",
    from: 'isPushed: ({ event }) => pushKind(event) === "pushed",',
    to: "isPushed: () => true,",
    why: "every push result confirms its target, also one that found no remote or an unreachable commit",
  },
  {
    id: "publication-push-newest-no-target",
    file: "machines/publication.ts",
    from:
      'event.type === "ACCEPTED"\n' +
      "        ? { inflight: event.target, queued: null, pending: null, attempts: 0, lastError: null }",
    to: 'event.type === "ACCEPTED"\n        ? { queued: null, pending: null, attempts: 0, lastError: null }',
    why: "a push starts without naming the in-flight target, so the push actor pushes nothing",
  },
  {
    id: "publication-failure-count-stuck",
    file: "machines/publication.ts",
    from: "context.pending === context.inflight ? context.attempts + 1 : 1,",
    to: "context.pending === context.inflight ? context.attempts : 1,",
    why: "repeated failures of the same pending target are not counted",
  },
  {
    id: "publication-shutdown-no-fence",
    file: "machines/publication.ts",
    from: "generation: ({ context }) => context.generation + 1,",
    to: "generation: ({ context }) => context.generation,",
    why: "shutdown and a lineage reset do not fence the generation the next push runs under",
  },
  {
    id: "publication-transition-queued-waits",
    file: "machines/publication.ts",
    from: '{ guard: "hasQueuedUnderTransitionPolicy", target: "pushing", actions: ["startPushQueued"] },',
    to: "",
    why: "under the transition policy a target queued behind a push waits for a run end",
  },
  {
    id: "publication-push-error-confirms",
    file: "machines/publication.ts",
    from: 'onError: { target: "settling", actions: ["keepResult", "failInflight"] },',
    to: 'onError: { target: "settling", actions: ["keepResult", "confirmInflight"] },',
    why: "the push actor's onError goes the success way: a failed push confirms its target",
  },
  {
    id: "publication-pushed-result-dropped",
    file: "machines/publication.ts",
    from: '{ guard: "isPushed", target: "settling", actions: ["keepResult", "confirmInflight", "tellSyncPushed"] },',
    to: "",
    why: "a push's success result is dropped: the machine stays pushing a target the remote already has",
  },
  {
    id: "publication-push-started-twice",
    file: "machines/publication.ts",
    from: 'on: { ACCEPTED: { actions: ["queueNewest"] } },',
    to: 'on: { ACCEPTED: { target: "pushing", reenter: true, actions: ["queueNewest"] } },',
    why: "a cohort accepted during a push restarts the push actor: a second push while one is in flight",
  },
  {
    id: "publication-run-ended-no-reinvoke",
    file: "machines/publication.ts",
    from: 'guard: "isPushed",\n                    target: "#publication.remote.pushing",',
    to: 'guard: "isPushed",\n                    target: "inFlight",',
    why: "after a remembered run end the queued target is made in flight but no push actor starts for it",
  },
  {
    id: "publication-record-write-skipped",
    file: "machines/publication.ts",
    from: 'enqueue.emit({ type: "publication.record", record });',
    to: "",
    why: "a changed pending publication is never written to the durable record (lost on restart)",
  },
  {
    id: "publication-unanswered-pushes",
    file: "machines/publication.ts",
    from: 'onError: { target: "pending", actions: ["noteUnanswered"] },',
    to: 'onError: { target: "pushing", actions: ["startPushPending"] },',
    why: "a remote that could not be asked is pushed to anyway, and the question's cause is lost",
  },
  {
    id: "publication-recovery-ignores-record",
    file: "machines/publication.ts",
    from: 'record?.state === "pending"\n',
    to: 'record?.state === "pending" && false\n',
    why: "restart recovery ignores the revision the record names pending and pushes the selected one instead",
  },
  // run
  {
    id: "run-prompt-added-twice",
    file: "machines/run.ts",
    from: 'on: { USER_MESSAGE: { target: "framed" } },',
    to: 'on: { USER_MESSAGE: { target: "framed", actions: ["addUserMessage"] } },',
    why: "the prompt Pi reports as the run's first user message is added to the specification a second time",
  },
  {
    id: "run-unannounced-framed",
    file: "machines/run.ts",
    from: '{ guard: "openedUnannounced", target: "awaitingSource" },',
    to: '{ guard: "openedUnannounced", target: "framed" },',
    why: "a run agent_start alone began never learns which message started it",
  },
  {
    id: "run-own-anchor-named-source",
    file: "machines/run.ts",
    from: '{ guard: "isOwnAnchor", target: "framed" },',
    to: '{ guard: "isOwnAnchor", target: "framed", actions: ["nameSource"] },',
    why: "State Flow's own run anchor is named as what started the run",
  },
  {
    id: "run-no-fresh-answer",
    file: "machines/run.ts",
    from: 'on: { USER_MESSAGE: { target: "resolving", actions: ["askAgain"] } },',
    to: "on: { USER_MESSAGE: {} },",
    why: "a follow-up after the run's answer is answered without resolution (no final:true asked, no response)",
  },
  {
    id: "run-accepted-forgotten",
    file: "machines/run.ts",
    from: "accepted: context.accepted || event.output.accepted,",
    to: "accepted: event.output.accepted,",
    why: "a later unaccepted answer hides an accepted one: the bootstrap never ends",
  },
  {
    id: "run-discards-forgotten",
    file: "machines/run.ts",
    from: "discarded: [...context.discarded, ...event.output.discarded],",
    to: "discarded: context.discarded,",
    why: "drafts an earlier answer of the run discarded come back into its later inferences",
  },
  {
    id: "run-ordinary-prepared",
    file: "machines/run.ts",
    from: 'always: [{ guard: "equipped", target: "refreshing" }, { target: "none" }],',
    to: 'always: [{ target: "refreshing" }],',
    why: "an ordinary run (State Flow off) reads the shared scopes and the Knowledge sources",
  },
  {
    id: "run-finding-dropped",
    file: "machines/run.ts",
    from: 'onDone: { target: "discovering", actions: ["keepFreshness"] },',
    to: 'onDone: { target: "discovering" },',
    why: "the run adopts another session's change but its context never says what moved",
  },
  {
    id: "run-later-answer-unasked",
    file: "machines/run.ts",
    from: "askAgain: assign({ answered: false }),",
    to: "askAgain: assign({}),",
    why: "a request added after an accepted answer counts as answered when its own answer never came",
  },
  {
    id: "specification-interrupted-forgotten",
    file: "machines/specification.ts",
    from: "const open = current.unanswered && ",
    to: "const open = false && ",
    why: "a prompt replaces a request whose run was interrupted: the user's request is forgotten",
  },
  {
    id: "episode-tree-keeps-specification",
    file: "machines/episode.ts",
    from: "? specificationCarrying(event.carried)",
    to: "? context.specification",
    why: "a /tree or a resume carries the requests of another branch point, or forgets the branch's own",
  },
  // barrier
  {
    id: "barrier-call-allowed-always",
    file: "machines/barrier.ts",
    from: "callAllowed: ({ context, event }) => !decide(context, toolCallId(event)).block,",
    to: "callAllowed: () => true,",
    why: "siblings of patch_state run in the same batch",
  },
  {
    id: "barrier-last-patch-runs",
    file: "machines/barrier.ts",
    from: "return calls.find((c) => c.name === PATCH_TOOL)?.id ?? null;",
    to: "return calls.findLast((c) => c.name === PATCH_TOOL)?.id ?? null;",
    why: "the last patch_state of a batch runs instead of the first",
  },
  // restore selection
  {
    id: "restore-unavailable-falls-through",
    file: "machines/restore.ts",
    from: 'if (verdict === "unavailable") return',
    to: 'if (verdict === "unavailable" && false) return',
    why: "a replaced file-only cohort falls through to older markers instead of failing closed",
  },
  {
    id: "restore-foreign-stop-is-passive",
    file: "machines/restore.ts",
    from: 'marker.stoppedBy === physicalSessionId ? { kind: "passive" } : { kind: "disabled", inherited: true }',
    to: '{ kind: "passive" }',
    why: "a stop marker written by another physical session restores its passive handoff",
  },
  {
    id: "restore-only-invalid-is-none",
    file: "machines/restore.ts",
    from: 'if (skippedInvalid > 0) return { kind: "unproven", revision: null, reason: "noValidPointer" };',
    to: "",
    why: "a branch whose every pointer is invalid restores as ordinary instead of failing closed",
  },
];

/** Every mutant the script judges. */
export const ALL_MUTANTS: readonly Mutant[] = [...MUTANTS, ...RUNTIME_MUTANTS];

async function main(): Promise<void> {
  const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..");
  const started = Date.now();
  // One snapshot of the checkout for the baselines and every mutant: the sources may change while
  // this runs, and each mutant must differ from its suite's baseline by its one replacement only.
  const snapshot = copyRepo(repo, repo, "snapshot");
  try {
    await judgeAll(snapshot, repo, started);
  } finally {
    rmSync(snapshot, { recursive: true, force: true });
  }
}

async function judgeAll(snapshot: string, repo: string, started: number): Promise<void> {
  // Validate every replacement before spending minutes on test runs.
  for (const m of ALL_MUTANTS) applyMutant(readFileSync(join(snapshot, m.file), "utf8"), m);
  // Ids given on the command line select mutants (e.g. to recheck a survivor after a test change).
  const wanted = process.argv.slice(2);
  const unknown = wanted.filter((id) => !ALL_MUTANTS.some((m) => m.id === id));
  if (unknown.length > 0) throw new Error(`unknown mutant ids: ${unknown.join(", ")}`);
  const selected = wanted.length > 0 ? ALL_MUTANTS.filter((m) => wanted.includes(m.id)) : ALL_MUTANTS;
  // Each distinct suite runs once unmutated: a mutant is compared with exactly what its suite does without it.
  const suites = new Map(selected.map((m) => [suiteOf(m).join(" "), suiteOf(m)] as const));
  const files = new Set(selected.map((m) => m.file)).size;
  console.log(
    `[mutate] ${selected.length} mutants of ${files} source files on ${suites.size} suites, ${PARALLEL} at a time`,
  );
  const jobs: Job[] = [
    ...[...suites.values()].map((suite) => ({ mutant: null, suite })),
    ...selected.map((mutant) => ({ mutant, suite: suiteOf(mutant) })),
  ];
  const outcomes = await pool(jobs, PARALLEL, async (job) => {
    const outcome = await judge(snapshot, repo, job);
    const verdict = job.mutant ? outcome.verdict : outcome.verdict === "survived" ? "passes" : "FAILS";
    console.log(`[mutate] ${outcome.id}: ${verdict} (${outcome.seconds.toFixed(1)} s)`);
    return outcome;
  });
  const baselines = outcomes.slice(0, suites.size);
  const results = outcomes.slice(suites.size);

  console.log("\nmutant → caught by");
  for (const r of results) {
    const head = `${r.id} → ${r.verdict === "caught" ? "" : r.verdict.toUpperCase()}`;
    if (r.verdict !== "caught") console.log(`${head}${r.detail ? ` (${r.detail})` : ""}`);
    else r.by.forEach((b, i) => console.log(i === 0 ? `${head}${b}` : `${" ".repeat(r.id.length + 3)}${b}`));
  }
  const caught = results.filter((r) => r.verdict === "caught").length;
  const survived = results.filter((r) => r.verdict === "survived").length;
  const errors = results.filter((r) => r.verdict === "error").length;
  const seconds = (Date.now() - started) / 1000;
  const counts = `${caught}/${results.length} caught, ${survived} survived, ${errors} not judged`;
  console.log(`\n${counts} in ${seconds.toFixed(0)} s`);
  // The baselines are exactly what every mutant is compared against: if an unmutated suite fails,
  // every "caught" on it is meaningless.
  const failedBaselines = baselines.filter((b) => b.verdict !== "survived");
  const baselineOk = failedBaselines.length === 0;
  for (const b of failedBaselines)
    console.error(`the unmutated copy does not pass: ${b.id}: ${b.detail ?? b.by.join("; ")}`);
  const summary = {
    total: results.length,
    caught,
    survived,
    ...(errors > 0 ? { errors } : {}),
    ...(baselineOk ? {} : { baseline: "failed" }),
    mutants: results.map((r, i) => ({
      id: r.id,
      suite: suiteOf(selected[i]!),
      caught: r.verdict === "caught",
      by: r.by,
      ...(r.verdict === "error" ? { error: r.detail } : {}),
    })),
  };
  console.log(`MUTATE ${JSON.stringify(summary)}`);
  process.exitCode = baselineOk && survived === 0 && errors === 0 ? 0 : 1;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  });
}
