// The episode and resolution machines with stand-ins for the actors the runtime supplies: they
// start and never settle, so a test (or a generated path) delivers their done and error events itself.
import { fromPromise } from "xstate";
import { episodeMachine, type StartStorageInput } from "../../machines/episode.ts";
import type { RestoreResult } from "../../machines/restore.ts";
import { resolutionMachine, type CommitResponseInput } from "../../machines/resolution.ts";

const never = () => new Promise<never>(() => undefined);

export const episodeWithPendingActors = episodeMachine.provide({
  actors: {
    startStorage: fromPromise<void, StartStorageInput>(never),
    adoptGit: fromPromise<void>(never),
    selectRestore: fromPromise<RestoreResult>(never),
    persistStop: fromPromise<void>(never),
  },
});

/** The resolution machine with a stand-in commit actor that never settles (a path sends its result). */
export const resolutionWithPendingCommit = resolutionMachine.provide({
  actors: { commitResponse: fromPromise<void, CommitResponseInput>(never) },
});
