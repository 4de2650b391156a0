// A BranchHost that keeps a branch in memory, for driving the runtime without Pi: checkpoint
// entries and stop handoffs in order (markers are derived from them as the Pi adapter derives
// them from session entries), and what reached the user.
import type { ScopeState } from "../../storage/core/scope-state.ts";
import type { BranchMarker } from "../../machines/restore.ts";
import { NOTHING_CARRIED, type CarriedRequests } from "../../machines/specification.ts";
import type { BranchHost, CheckpointData, HostView, NoticeLevel } from "../../runtime/host.ts";

export class RecordingHost implements BranchHost {
  readonly entries: ({ checkpoint: CheckpointData } | { handoff: ScopeState | null; by: string })[] = [];
  readonly notices: { message: string; level: NoticeLevel }[] = [];
  readonly steers: number[] = [];
  readonly discardedDrafts: number[] = [];
  /** The interrupted requests recorded after each run, in order (the newest is what the branch carries). */
  readonly carried: CarriedRequests[] = [];
  registered = 0;
  view: HostView | null = null;
  /** What missingTools() reports while the last view asked for the tools (an allowlist that omits them). */
  withheldTools: readonly string[] = [];
  readonly sessionId: string;
  constructor(sessionId: string) {
    this.sessionId = sessionId;
  }

  /** Not a fork (runtime tests of forks run through the Pi adapter). */
  parentSession(): null {
    return null;
  }

  markers(): BranchMarker[] {
    const markers: BranchMarker[] = [];
    let handoffBy: string | undefined;
    for (const entry of this.entries) {
      if ("handoff" in entry) handoffBy = entry.by;
      else if ("revision" in entry.checkpoint) markers.push({ kind: "revision", revision: entry.checkpoint.revision });
      else markers.push(handoffBy === undefined ? { kind: "disabled" } : { kind: "disabled", stoppedBy: handoffBy });
    }
    return markers;
  }
  recordedRevisions(): ReadonlySet<string> {
    return new Set(this.markers().flatMap((m) => (m.kind === "revision" ? [m.revision] : [])));
  }
  appendCheckpoint(data: CheckpointData): void {
    this.entries.push({ checkpoint: data });
  }
  sendHandoff(state: ScopeState | null): void {
    this.entries.push({ handoff: state, by: this.sessionId });
  }
  steer(attempt: number): void {
    this.steers.push(attempt);
  }
  notify(message: string, level: NoticeLevel): void {
    this.notices.push({ message, level });
  }
  registerTools(): void {
    this.registered++;
  }
  sync(view: HostView): void {
    this.view = view;
  }

  carriedRequests(): CarriedRequests {
    return this.carried.at(-1) ?? NOTHING_CARRIED;
  }
  recordCarried(carried: CarriedRequests): void {
    this.carried.push(carried);
  }

  recordDiscarded(id: number): void {
    this.discardedDrafts.push(id);
  }
  missingTools(): readonly string[] {
    return this.view?.toolsActive ? this.withheldTools : [];
  }
}
