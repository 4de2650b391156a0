// The I/O the episode machine invokes: start the store, adopt it into Git, select a restore, persist
// a stop, remove an unsaved session's empty start, and the host action that freezes the stop handoff.
// Each actor resolves or rejects; the machine draws both outcomes, so nothing here decides what
// happens next.

import { join } from "node:path";
import { reuseAnchoredCohort } from "../storage/adoption.ts";
import { readTemporalState } from "../storage/core/temporal.ts";
import type { RestoreResult } from "../machines/restore.ts";
import { checkpointOf, type BranchBinding } from "./branch-binding.ts";
import type { ForkCopy } from "../storage/state-store.ts";
import { forkedDetail } from "./fork-copy.ts";
import type { BranchHost } from "./host.ts";
import type { KnowledgeUpkeep } from "./knowledge-upkeep.ts";
import { legacyMigratedNotice } from "./notices.ts";
import type { BranchPublication } from "./branch-publication.ts";
import type { PublicationPolicy } from "./publication.ts";
import { frozenRuntime, restoreBranch } from "./restore-branch.ts";

export class EpisodeActors {
  private readonly binding: BranchBinding;
  private readonly host: BranchHost;
  private readonly publication: BranchPublication;
  private readonly knowledge: KnowledgeUpkeep;
  private readonly policy: PublicationPolicy;

  constructor(
    binding: BranchBinding,
    host: BranchHost,
    publication: BranchPublication,
    knowledge: KnowledgeUpkeep,
    policy: PublicationPolicy,
  ) {
    this.binding = binding;
    this.host = host;
    this.publication = publication;
    this.knowledge = knowledge;
    this.policy = policy;
  }

  /** `startStorage`: a new session origin, or the restart from the frozen stop boundary. */
  async startStorage(fromFrozen: boolean): Promise<void> {
    const store = await this.binding.openStateStore(true);
    const migrated = await store.migrateLegacy();
    if (migrated) this.host.notify(legacyMigratedNotice(migrated), "info");
    const selected = fromFrozen ? await frozenRuntime(this.binding.state, this.host.markers(), store) : null;
    const state = await store.start(selected, this.policy);
    // Bind the branch first, then publish: the new publication recovers this revision as pending
    // and pushes it once (in the background: start never waits on the network).
    await this.binding.accept(state, false);
    await this.publication.open(state, store.store.publication ?? null);
    await this.knowledge.migrateLegacySkills();
  }

  /**
   * `startFork`: the fork's origin, its session layer its own copy of the parent's at the fork point
   * (read by the restore), published and bound like a start. Outputs the notice's detail.
   */
  async startFork(copy: ForkCopy): Promise<string> {
    const store = await this.binding.openStateStore(false);
    const state = await store.startFork(copy, this.policy);
    await this.binding.accept(state, false);
    await this.publication.open(state, store.store.publication ?? null);
    return forkedDetail(copy);
  }

  /**
   * `adoptGit`: commits the active branch's exact current file cohort into Git (initializing the
   * repository when needed) with a config-only publication, or reuses the revision that already
   * holds it identically; binds the branch to that commit and hands publication to a Git-backed
   * generation. On failure nothing changed in the files and the branch keeps its file-only store.
   */
  async adoptIntoGit(): Promise<void> {
    const fileStore = this.binding.store;
    const current = this.binding.state;
    try {
      if (!current) throw new Error("no runtime is selected on this branch");
      const store = await this.binding.openStateStore(true);
      // Git may already hold this exact cohort (another session's start initialized it over these
      // files): its owner revision is reused, and only a cohort it does not hold is committed.
      const state =
        (await reuseAnchoredCohort(store, current)) ?? (await store.start(current, current.config.remotePublication));
      // The file-only publication has nothing to publish; the Git-backed one recovers this revision
      // as pending and pushes it once (as after a start).
      this.publication.close();
      await this.binding.accept(state, false);
      await this.publication.open(state, store.store.publication ?? null);
    } catch (error) {
      // The branch stays exactly where it was: its file-only store, state and publication. (A repository
      // opened before the failure is not used until the next start.)
      this.binding.store = fileStore;
      this.binding.state = current;
      if (current) await this.publication.open(current, null);
      throw error;
    }
  }

  /**
   * `selectRestore`: settles an interrupted publication, then selects the branch's revision. A
   * store that cannot be read at all rejects: the machine fails closed.
   */
  async selectRestore(): Promise<RestoreResult> {
    try {
      const store = await this.binding.openStateStore(false);
      // The publication opened after the restore asks which remote to push to (a git process):
      // asked now, it runs while the restore reads the store.
      void store.store.publication?.remote.publicationRemote().catch(() => undefined);
      const outcome = await restoreBranch({
        store,
        host: this.host,
        sessionId: this.binding.identity!.sessionId,
        current: () => this.binding.state,
        policy: this.policy,
        freeze: (stopped) => {
          this.binding.state = stopped;
          this.freezeHandoff();
        },
      });
      if (outcome.runtime) await this.publication.open(outcome.runtime, store.store.publication ?? null);
      this.binding.state = outcome.runtime;
      return outcome.result;
    } catch (error) {
      this.binding.state = null;
      throw error;
    }
  }

  /** `persistStop`: stop is config-only, the disabled revision is published. */
  async persistStop(): Promise<void> {
    const { store, state } = this.binding;
    if (!state || !store) throw new Error("no runtime is selected on this branch");
    // (the episode says it once the stop is durable: notice `stopped`)
    this.binding.state = await store.publishConfig(state, { ...state.config, enabled: false }, "state-flow: stop");
  }

  /**
   * `discardUnsaved`: the session ends and Pi never saved it (Pi writes its file only once the session holds a
   * conversation), so nobody can resume it: the store session it started is removed when it holds nothing but
   * its empty start (StateStore.discardEmptyStart). Outputs the removed folder, or null when nothing was removed.
   */
  async discardUnsaved(): Promise<string | null> {
    const { store, state } = this.binding;
    if (!store || !state) return null;
    const removed = await store.discardEmptyStart(state);
    return removed === null ? null : join(store.store.root, removed);
  }

  /**
   * Host action `freezeHandoff`: the frozen exit handoff (effective state at the stop boundary)
   * followed by the branch's disabled marker: together they make this physical session's passive
   * projection durable across reload, resume and /tree, while another session reading the branch
   * sees plain off.
   */
  freezeHandoff(): void {
    const { identity, state } = this.binding;
    if (!identity) return;
    this.host.sendHandoff(state ? readTemporalState(state.view).state : null);
    // The stopped revision follows the handoff on the branch, so any position that holds it also
    // holds the handoff, and a restart (or a restore after /tree) finds that exact boundary.
    if (state) this.host.appendCheckpoint(checkpointOf(state));
    this.host.appendCheckpoint({ disabled: true });
  }
}
