// The machines State Flow runs, in documentation order (docs/state-machines.md M1…M6).
import type { AnyStateMachine } from "xstate";
import { episodeMachine } from "./episode.ts";
import { resolutionMachine } from "./resolution.ts";
import { publicationMachine } from "./publication.ts";
import { barrierMachine } from "./barrier.ts";
import { runMachine } from "./run.ts";
import { syncMachine } from "./sync.ts";

export interface CatalogEntry {
  /** Section id in docs/state-machines.md. */
  doc: string;
  name: string;
  machine: AnyStateMachine;
  module: string;
}

export const machineCatalog: readonly CatalogEntry[] = [
  { doc: "M1", name: "episode", machine: episodeMachine, module: "machines/episode.ts" },
  { doc: "M2", name: "resolution", machine: resolutionMachine, module: "machines/resolution.ts" },
  { doc: "M3", name: "publication", machine: publicationMachine, module: "machines/publication.ts" },
  { doc: "M4", name: "barrier", machine: barrierMachine, module: "machines/barrier.ts" },
  { doc: "M5", name: "run", machine: runMachine, module: "machines/run.ts" },
  { doc: "M6", name: "sync", machine: syncMachine, module: "machines/sync.ts" },
];
