// The episode, run and resolution machines with stand-ins for the actors the runtime supplies: they
// start and never settle, so a test (or a generated path) delivers their done and error events itself.
import { fromPromise } from "xstate";
import { episodeMachine } from "../../machines/episode.ts";
import { type StartForkInput, type StartStorageInput } from "../../machines/episode-types.ts";
import type { RestoreResult } from "../../machines/restore.ts";
import { resolutionMachine, type CommitResponseInput } from "../../machines/resolution.ts";
import { runMachine } from "../../machines/run.ts";

const never = () => new Promise<never>(() => undefined);

/** The resolution machine with a stand-in commit actor that never settles (a path sends its result). */
export const resolutionWithPendingCommit = resolutionMachine.provide({
  actors: { commitResponse: fromPromise<void, CommitResponseInput>(never) },
});

/** The run machine with stand-in actors: its resolution's commit and its Knowledge discovery never settle. */
export const runWithPendingActors = runMachine.provide({
  actors: { resolution: resolutionWithPendingCommit, discoverKnowledge: fromPromise<void>(never) },
});

export const episodeWithPendingActors = episodeMachine.provide({
  actors: {
    run: runWithPendingActors,
    startStorage: fromPromise<void, StartStorageInput>(never),
    startFork: fromPromise<string, StartForkInput>(never),
    adoptGit: fromPromise<void>(never),
    selectRestore: fromPromise<RestoreResult>(never),
    persistStop: fromPromise<void>(never),
    discardUnsaved: fromPromise<string | null>(never),
  },
});
