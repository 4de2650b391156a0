// What one Pi branch is bound to now: its store, the branch state loaded from it and the session's
// identity (both kept in the episode's context). Every module of the runtime reads the branch
// through here, and every new durable revision passes through `accept`, which records it on the
// branch and hands it to publication.

import type { ScopeSelector } from "../storage/core/scope-state.ts";
import { StateFlowError } from "../storage/core/errors.ts";
import { headBoundary, readTemporalState, type TemporalRead } from "../storage/core/temporal.ts";
import { killPoint } from "../storage/fs/crash-points.ts";
import { gitInstalled, openStore } from "../storage/open-store.ts";
import { StateStore, type BranchState, type SessionIdentity } from "../storage/state-store.ts";
import type { Actor } from "xstate";
import { type episodeMachine } from "../machines/episode.ts";
import { loadedBranch } from "../machines/episode-queries.ts";
import type { BranchHost, CheckpointData } from "./host.ts";
import type { BranchPublication } from "./branch-publication.ts";

export interface BindingOptions {
  /** Store root (SDK `repositoryRoot`, else state-flow.json's directory). */
  storeRoot: string;
  /** Environment for git (tests isolate identity and PATH here). */
  env: NodeJS.ProcessEnv;
}

/**
 * Where the branch's session identity and loaded state live: the episode's context in production
 * (`episodeCell`), so that no field beside the machine stands in for whether a branch is bound.
 */
export interface BranchCell {
  identity(): SessionIdentity | null;
  state(): BranchState | null;
  load(state: BranchState | null): void;
}

/** The episode's context as the cell: a load is an event, the machine keeps or drops it. */
export function episodeCell(episode: () => Actor<typeof episodeMachine>): BranchCell {
  const context = () => episode().getSnapshot().context;
  return {
    identity: () => context().identity as SessionIdentity | null,
    state: () => loadedBranch(episode().getSnapshot()) as BranchState | null,
    load: (state) => episode().send({ type: "LOADED", state }),
  };
}

/** A cell of its own, for the runtime's parts tested without an episode. */
export function memoryCell(identity: SessionIdentity): BranchCell {
  let loaded: BranchState | null = null;
  return { identity: () => identity, state: () => loaded, load: (state) => void (loaded = state) };
}

/** The branch's record of a state: its revision and the boundary it holds (step and transition). */
export function checkpointOf(state: BranchState): CheckpointData {
  const { id, step } = headBoundary(state.view.lineage);
  return { revision: state.pointer.revision, boundary: { id, step } };
}

export class BranchBinding {
  /** The store, opened once (a resource handle, like an actor ref; null until the first start or restore). */
  store: StateStore | null = null;
  private readonly cell: BranchCell;

  /** The branch's state as last loaded or accepted; null before a start or restore bound it. */
  get state(): BranchState | null {
    return this.cell.state();
  }
  set state(state: BranchState | null) {
    this.cell.load(state);
  }
  /** The session's identity (null before session_start). */
  get identity(): SessionIdentity | null {
    return this.cell.identity();
  }

  private readonly host: BranchHost;
  readonly options: BindingOptions;
  private readonly publication: BranchPublication;
  /** Told of every new revision (the run's Knowledge counts what was published since discovery). */
  private readonly onRevision: () => void;

  constructor(
    host: BranchHost,
    options: BindingOptions,
    publication: BranchPublication,
    onRevision: () => void,
    cell: BranchCell,
  ) {
    this.cell = cell;
    this.host = host;
    this.options = options;
    this.publication = publication;
    this.onRevision = onRevision;
  }

  /**
   * A new durable revision: bind the branch to it (a checkpoint entry) and hand it to publication.
   * `wait` false: under transition policy the push runs without being awaited (activation paths).
   */
  async accept(state: BranchState, wait = true): Promise<void> {
    const changed = state.pointer.revision !== this.state?.pointer.revision;
    this.state = state;
    if (!changed) return;
    this.onRevision();
    killPoint("branch.appending");
    this.host.appendCheckpoint(checkpointOf(state));
    killPoint("branch.appended");
    await this.publication.accepted(state.pointer.revision, wait);
  }

  /** The store, opened once; a start reopens a file-only store as Git once a git executable exists. */
  async openStateStore(initGit: boolean): Promise<StateStore> {
    // (git availability is checked now, not when the store was opened: it may have been installed since)
    const reusable = !initGit || this.store?.store.kind === "git" || !gitInstalled(this.options.env);
    if (this.store && reusable) return this.store;
    const store = await openStore({ root: this.options.storeRoot, env: this.options.env, initGit });
    this.store = new StateStore(store, this.identity!);
    return this.store;
  }

  /** The branch's store is file-only while a git executable is available now (the machine decides what START means). */
  gitAdoptable(): boolean {
    return this.store?.store.kind === "file" && gitInstalled(this.options.env);
  }

  /** Lazy temporal read from the bound state: no publication, no history step. */
  read(offset: number, scope: ScopeSelector): TemporalRead {
    if (!this.state) throw new StateFlowError("offset-unavailable", "no State Flow runtime is selected on this branch");
    return readTemporalState(this.state.view, offset, scope);
  }
}
