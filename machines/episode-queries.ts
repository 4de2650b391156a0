// What the runtime asks the episode (M1): questions answered from its snapshot, so no caller keeps a
// lifecycle flag of its own. Pure, like the machine.
import type { ActorRefFrom } from "xstate";
import type { barrierMachine } from "./barrier.ts";
import type { EpisodeSnapshot } from "./episode.ts";
import type { RetainedPointer } from "./episode-types.ts";
import type { publicationMachine } from "./publication.ts";
import type { runMachine } from "./run.ts";
import { flattenValue } from "./state-value.ts";

/** patch_state / read_state are active, and resolution runs, only here. */
export function isToolsActive(s: EpisodeSnapshot): boolean {
  return s.matches("active");
}
/** Whether the host has registered the tools (they are then switched on and off, never re-registered). */
export function isToolsRegistered(s: EpisodeSnapshot): boolean {
  return s.context.toolsRegistered;
}
/** The pointer a failed-closed branch retains, and why; null unless failed closed. */
export function retainedPointer(s: EpisodeSnapshot): RetainedPointer | null {
  return s.context.retained;
}
/** The branch's patch_state barrier (M4). */
export function branchBarrier(s: EpisodeSnapshot): ActorRefFrom<typeof barrierMachine> {
  return s.children.barrier as ActorRefFrom<typeof barrierMachine>;
}
/** The branch's loaded state (the runtime's, opaque to the machine); null where none is bound. */
export function loadedBranch(s: EpisodeSnapshot): object | null {
  return s.context.loaded;
}
/** The current store generation's publication actor (undefined before the first open). */
export function branchPublication(s: EpisodeSnapshot): ActorRefFrom<typeof publicationMachine> | undefined {
  return s.children.publication as ActorRefFrom<typeof publicationMachine> | undefined;
}
/** The open Pi run's actor (undefined between runs). */
export function openRun(s: EpisodeSnapshot): ActorRefFrom<typeof runMachine> | undefined {
  return s.context.run ?? undefined;
}
/** True only while storage may be initialized or migrated (manual startup is read-only). */
export function mayInitializeStorage(s: EpisodeSnapshot): boolean {
  return s.matches("starting");
}
export type ProjectionMode =
  "ordinary" | "bootstrapTranscript" | "bootstrapHandoff" | "active" | "passive" | "failedClosed";
/** Which context projection the adapter builds for the next inference. */
export function projectionMode(s: EpisodeSnapshot): ProjectionMode {
  if (s.matches({ active: { bootstrap: "fromTranscript" } })) return "bootstrapTranscript";
  if (s.matches({ active: { bootstrap: "fromHandoff" } })) return "bootstrapHandoff";
  if (s.matches("active")) return "active";
  if (s.matches("passive")) return "passive";
  if (s.matches("failedClosed")) return "failedClosed";
  return "ordinary";
}
/** Flat dotted state name for status output, e.g. "active.bootstrap.fromHandoff". */
export function episodeStateName(s: EpisodeSnapshot): string {
  return flattenValue(s.value);
}
