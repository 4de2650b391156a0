// The runtime/effect mutants of `npm run mutate:machines`: single mistakes in the actors and effects
// the machines invoke (runtime/episode-actors.ts, runtime/publication.ts, the restore and what it
// says, the Git store's publication port), each owned by the suite of the module it breaks. The
// machines decide what happens next; these break what actually happens: a result dropped, a failure
// resolved as success, an effect run twice or skipped, a wait awaited or not, a recovery step
// skipped, a notice naming the wrong cause.
import type { Mutant } from "./mutant.ts";

const EPISODE_ACTORS = ["tests/runtime/episode-actors.test.ts"];
const PUBLICATION = ["tests/runtime/publication.test.ts", "tests/runtime/publication-records.test.ts"];
const RESTORE = ["tests/runtime/restore-branch.test.ts"];
const RUN = ["tests/runtime/run-session.test.ts", "tests/runtime/flow-runtime.test.ts"];

const FRESH = ["tests/adapters/pi/fresh-runs.test.ts"];

export const RUNTIME_MUTANTS: readonly Mutant[] = [
  // the run's shared-state check
  {
    id: "run-session-past-refreshed",
    file: "runtime/run-session.ts",
    from: '    if (live.selectedPast) return { kind: "selectedPast" };\n',
    to: "",
    why: "a branch restored to a past point is moved to the newest shared state: its selected past is lost",
    suite: FRESH,
  },
  {
    id: "run-session-adoption-unbound",
    file: "runtime/run-session.ts",
    from: "    if (this.binding.state === state) this.binding.state = next;\n",
    to: "",
    why: "the run says what moved but works from the old state: the model is told of a change it cannot see",
    suite: FRESH,
  },
  {
    id: "store-live-moves-blind",
    file: "storage/state-store.ts",
    from: 'shared: (["global", "cwd"] as const).filter(moved)',
    to: "shared: []",
    why: "another session's shared change stays invisible until this session's next patch",
    suite: FRESH,
  },
  // the run's runtime side
  {
    id: "run-session-tools-ignored",
    file: "runtime/run-session.ts",
    from: "return this.host.missingTools().length > 0;",
    to: "return false;",
    why: "a run the host cannot give State Flow's tools is equipped anyway: the model is asked for tools it lacks",
    suite: RUN,
  },
  {
    id: "run-session-anchor-never",
    file: "runtime/run-session.ts",
    from: "return this.current() !== before && this.equipped();",
    to: "return false;",
    why: "a result dropped: a run agent_start alone began gets no anchor, so its messages are not told apart",
    suite: RUN,
  },
  {
    id: "run-session-commit-not-awaited",
    file: "runtime/run-session.ts",
    from: "if (resolution) await waitFor(resolution,",
    to: "if (resolution) void waitFor(resolution,",
    why: "a wait not awaited: turn_end returns before the answer's commit, so the response is read stale",
    suite: RUN,
  },
  {
    id: "run-session-discard-unrecorded",
    file: "runtime/run-session.ts",
    from: 'if (event.type === "DRAFT") this.host.recordDiscarded(event.id ?? 0);',
    to: "",
    why: "an effect skipped: a discarded draft is not recorded on the branch, so a fork or a stop shows it again",
    suite: RUN,
  },
  {
    id: "run-session-steer-twice",
    file: "runtime/run-session.ts",
    from: "          this.host.steer(attempt);",
    to: "          this.host.steer(attempt);\n          this.host.steer(attempt);",
    why: "an effect run twice: one unresolved draft sends two hidden steers",
    suite: RUN,
  },
  // episode actors
  {
    id: "actors-start-waits-for-push",
    file: "runtime/episode-actors.ts",
    from: "start never waits on the network).\n    await this.binding.accept(state, false);",
    to: "start never waits on the network).\n    await this.binding.accept(state, true);",
    why: "a wait awaited that must not be: under transition policy a restart waits for its push to a remote",
    suite: EPISODE_ACTORS,
  },
  {
    id: "actors-start-no-publication",
    file: "runtime/episode-actors.ts",
    from: "    await this.publication.open(state, store.store.publication ?? null);\n    await this.knowledge",
    to: "    await this.knowledge",
    why: "an effect skipped: a start never opens its publication, so the new origin is never pushed",
    suite: EPISODE_ACTORS,
  },
  {
    id: "actors-adopt-keeps-file-generation",
    file: "runtime/episode-actors.ts",
    from: "      this.publication.close();\n",
    to: "",
    why: "adoption keeps the file-only publication generation: the Git store's commits are never pushed",
    suite: EPISODE_ACTORS,
  },
  {
    id: "actors-adopt-failure-keeps-repository",
    file: "runtime/episode-actors.ts",
    from: "      this.binding.store = fileStore;\n",
    to: "",
    why: "a recovery step skipped: a failed adoption leaves the branch on the half-opened Git store",
    suite: EPISODE_ACTORS,
  },
  {
    id: "actors-adopt-failure-keeps-revision",
    file: "runtime/episode-actors.ts",
    from: "      this.binding.state = current;\n",
    to: "",
    why: "a recovery step skipped: a failed adoption leaves the branch bound to the revision it committed into Git",
    suite: EPISODE_ACTORS,
  },
  {
    id: "actors-restore-error-keeps-state",
    file: "runtime/episode-actors.ts",
    from: "      this.binding.state = null;\n      throw error;",
    to: "      throw error;",
    why: "a flag kept outside the machine: a restore that failed closed still holds the previous runtime",
    suite: EPISODE_ACTORS,
  },
  {
    id: "actors-restore-no-publication",
    file: "runtime/episode-actors.ts",
    from: "      if (outcome.runtime) await this.publication.open(outcome.runtime, store.store.publication ?? null);\n",
    to: "",
    why: "an effect skipped: a resumed branch never recovers its pending publication (nothing owed is pushed)",
    suite: EPISODE_ACTORS,
  },
  {
    id: "actors-restore-result-unbound",
    file: "runtime/episode-actors.ts",
    from: "      this.binding.state = outcome.runtime;\n",
    to: "",
    why: "a result dropped: the restore answers the machine but the branch is not bound to the runtime it chose",
    suite: EPISODE_ACTORS,
  },
  {
    id: "actors-stop-accepted-as-revision",
    file: "runtime/episode-actors.ts",
    from:
      "this.binding.state = await store.publishConfig(" +
      'state, { ...state.config, enabled: false }, "state-flow: stop");',
    to:
      "await this.binding.accept(\n" +
      '      await store.publishConfig(state, { ...state.config, enabled: false }, "state-flow: stop"),\n' +
      "    );",
    why:
      "an effect run twice: the stop is recorded as an ordinary revision and then again by the frozen " +
      "handoff, so the disabled revision is checkpointed before its handoff",
    suite: EPISODE_ACTORS,
  },
  {
    id: "actors-handoff-after-marker",
    file: "runtime/episode-actors.ts",
    from:
      "    this.host.sendHandoff(state ? readTemporalState(state.view).state : null);\n" +
      "    // The stopped revision follows the handoff on the branch, so any position that holds it also\n" +
      "    // holds the handoff, and a restart (or a restore after /tree) finds that exact boundary.\n" +
      "    if (state) this.host.appendCheckpoint(checkpointOf(state));\n" +
      "    this.host.appendCheckpoint({ disabled: true });\n",
    to:
      "    if (state) this.host.appendCheckpoint(checkpointOf(state));\n" +
      "    this.host.appendCheckpoint({ disabled: true });\n" +
      "    this.host.sendHandoff(state ? readTemporalState(state.view).state : null);\n",
    why: "the handoff follows the disabled marker, so the marker does not carry this session's stop (plain off)",
    suite: EPISODE_ACTORS,
  },
  {
    id: "actors-freeze-skips-revision",
    file: "runtime/episode-actors.ts",
    from: "    if (state) this.host.appendCheckpoint(checkpointOf(state));\n",
    to: "",
    why: "the stopped revision is not recorded on the branch: a restart or /tree cannot find the stop boundary",
    suite: EPISODE_ACTORS,
  },
  // publication actors and driver
  {
    id: "publication-failed-push-resolves",
    file: "runtime/publication.ts",
    from: 'if (result.kind === "failed") throw new Error(result.detail || "push failed");',
    to: 'if (result.kind === "failed") return { kind: "local-only" };',
    why: "the push actor's failure is swallowed so it resolves: a rejected push becomes local-only, never retried",
    suite: PUBLICATION,
  },
  {
    id: "publication-pushed-remote-dropped",
    file: "runtime/publication.ts",
    from:
      'if (result.kind === "pushed") return { kind: "pushed", ' +
      "...(result.remote ? { remote: result.remote } : {}) };",
    to: 'if (result.kind === "pushed") return { kind: "pushed" };',
    why: "a result dropped: the push resolves without naming the remote it reached",
    suite: PUBLICATION,
  },
  {
    id: "publication-unanswered-as-lacks",
    file: "runtime/publication.ts",
    from: '        if (answer.kind === "unanswered") throw new Error(answer.detail);\n',
    to: "",
    why: "a remote that could not be asked counts as lacking: the recovered target is pushed blind, its cause lost",
    suite: PUBLICATION,
  },
  {
    id: "publication-record-never-read",
    file: "runtime/publication.ts",
    from: "        records ? records.read() : null,",
    to: "        null,",
    why: "a result dropped: restart recovery never reads the durable record, so a pending target is forgotten",
    suite: PUBLICATION,
  },
  {
    id: "publication-settled-skips-writes",
    file: "runtime/publication.ts",
    from: "    await waitFor(this.actor, (s) => !isBusy(s));\n    await this.writes;\n",
    to: "    await waitFor(this.actor, (s) => !isBusy(s));\n",
    why: "a wait not awaited: settled() resolves before the durable record is written (a restart reads the old one)",
    suite: PUBLICATION,
  },
  {
    id: "publication-wait-option-ignored",
    file: "runtime/publication.ts",
    from: "const waits = options?.wait !== false && waitsForPush(this.snap());",
    to: "const waits = waitsForPush(this.snap());",
    why: "a wait awaited that must not be: activation under transition policy waits for the push",
    suite: PUBLICATION,
  },
  {
    id: "publication-shutdown-forgets-pending",
    file: "runtime/publication.ts",
    from: '    const pending = this.pending;\n    this.actor.send({ type: "SHUTDOWN" });',
    to: '    this.actor.send({ type: "SHUTDOWN" });\n    const pending = this.pending;',
    why: "shutdown fences first and then reads what stays pending: the pending publication is lost",
    suite: PUBLICATION,
  },
  {
    id: "publication-opened-twice",
    file: "runtime/branch-publication.ts",
    from: "    if (this.driver) return;\n    const sessionKey",
    to: "    const sessionKey",
    why: "an effect run twice: a bound branch opens a second generation beside the first, both pushing",
    suite: PUBLICATION,
  },
  {
    id: "publication-pending-notice-wrong-cause",
    file: "runtime/branch-publication.ts",
    from: "is pending (${pending.lastError}); ",
    to: "is pending (${pending.revision}); ",
    why: "the notice of a pending push names the revision again instead of the error that kept it pending",
    suite: PUBLICATION,
  },
  // restore
  {
    id: "restore-successor-unrecorded",
    file: "runtime/restore-branch.ts",
    from: "  context.host.appendCheckpoint(checkpointOf(successor));\n",
    to: "",
    why: "a recovery step skipped: a cohort the store accepted is restored but never recorded on the branch",
    suite: RESTORE,
  },
  {
    id: "restore-stopped-successor-unfrozen",
    file: "runtime/restore-branch.ts",
    from: "    context.freeze(successor);\n",
    to: "",
    why: "a recovery step skipped: a durable stop the branch never recorded gets no handoff and no markers",
    suite: RESTORE,
  },
  {
    id: "restore-unavailable-reason-lost",
    file: "runtime/restore-branch.ts",
    from: "      unavailable.set(revision, errorMessage(error)); // why, for the status and the refusal\n",
    to: "",
    why: "the wrong error passed on: an unavailable cohort fails closed without the store's reason",
    suite: RESTORE,
  },
  {
    id: "restore-replacement-unrecorded",
    file: "runtime/restore-branch.ts",
    from: "  if (restored?.replaces) {\n    host.appendCheckpoint(checkpointOf(runtime));\n",
    to: "  if (restored?.replaces) {\n",
    why: "an effect run again: the replacement of an older store form is not recorded, so every restore redoes it",
    suite: RESTORE,
  },
  {
    id: "restore-lock-busy-silent",
    file: "runtime/restore-branch.ts",
    from: '    context.host.notify(errorMessage(error), "warning");\n    return { kind: "lockBusy"',
    to: '    return { kind: "lockBusy"',
    why: "a held publication lock fails the restore without naming its holder (the cause the remedy needs)",
    suite: RESTORE,
  },
  {
    id: "legacy-restore-older-selection-replaced",
    file: "runtime/legacy-restore.ts",
    from: "    if (head !== layout.revision) return;\n",
    to: "",
    why: "a /tree selection older than HEAD is replaced by HEAD's adopted layout instead of read where it is",
    suite: ["tests/runtime/legacy-restore.test.ts"],
  },
  {
    id: "legacy-restore-predecessor-unmigrated",
    file: "runtime/legacy-restore.ts",
    from: "  const migrated = await store.migrateLegacy();\n",
    to: "  const migrated = undefined;\n",
    why: "a recovery step skipped: the live state.json files stay unmigrated under the predecessor's runtime",
    suite: ["tests/runtime/legacy-restore.test.ts"],
  },
  // the publication port of a Git store (its durable record)
  {
    id: "pending-record-cause-lost",
    file: "storage/git/pending-record.ts",
    from: "    ...(record.lastError === undefined ? {} : { lastError: record.lastError }),\n",
    to: "",
    why: "a result dropped: a restart reads its pending record without the error that kept the push pending",
    suite: ["tests/storage/git/pending-record.test.ts"],
  },
  {
    id: "publication-port-per-worktree",
    file: "storage/open-store.ts",
    from: "  const commonDir = git.info.commonDir;\n",
    to: "  const commonDir = git.info.gitDir;\n",
    why: "the pending records live in one worktree's git dir: a session opened in another worktree forgets its debt",
    suite: ["tests/storage/open-store.test.ts"],
  },
  {
    id: "notices-stop-cause-says-adoption",
    file: "runtime/notices.ts",
    from: '    prefix: "State Flow could not persist the stop: ",',
    to: '    prefix: "State Flow could not adopt the store into Git: ",',
    why: "a notice that names the wrong cause: a failed stop is reported as a failed adoption",
    suite: ["tests/runtime/notices.test.ts"],
  },
  {
    id: "status-pending-target-hidden",
    file: "runtime/status.ts",
    from: '${input.pendingTarget ? ` (pending ${input.pendingTarget})` : ""}',
    to: "",
    why: "the status hides a pending publication: the person believes the remote is up to date",
    suite: ["tests/runtime/status.test.ts"],
  },
];
