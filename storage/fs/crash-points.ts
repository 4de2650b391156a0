// Named write steps of a publication, so the crash matrix can kill a real process at exactly one
// of them. `STATE_FLOW_KILL_AT=<point>#<n>` makes the n-th arrival of this process at <point>
// send itself SIGKILL (no cleanup, no exit handlers: what a crash or `kill -9` leaves behind).
// Unset (always, outside the crash tests), every call is one environment lookup.
//
// The points are listed in the order a publication reaches them; docs/reliability.md says what
// is guaranteed after a kill at each one.

export const KILL_POINTS = [
  // both backends
  "lock.acquired", // the publication lock file exists
  "temp.written", // one live file's temp copy holds its bytes, not yet fsynced
  "temp.synced", // one temp copy is fsynced
  "journal.written", // the publication intent is durable; nothing live has changed yet
  "rename", // one live file was renamed into place
  "dirs.synced", // the renamed files' directories are fsynced
  "journal.removed", // the intent is gone: the cohort is complete
  "lock.released", // the publication lock is gone; the caller has not heard back yet
  // Git backend only, in order
  "index.copied", // the caller's index was copied to the isolated index
  "index.staged", // git add -A staged the worktree delta into the isolated index
  "blobs.written", // the prepared bytes are loose blob objects
  "trees.written", // the tree objects are written
  "index.overlaid", // the isolated index holds the prepared blobs and the cache tree
  "commit.written", // the commit object is written
  "ref.locked", // <ref>.lock and HEAD.lock exist, the new value is fsynced in <ref>.lock
  "reflog.appended", // the reflog lines are appended
  "ref.moved", // <ref>.lock was renamed over the ref: the commit is accepted
  "ref.unlocked", // HEAD.lock is removed
  "index.locked", // index.lock (held since before the journal) holds the new index
  "index.installed", // the new index is the caller's index
  // Pi adapter
  "branch.appending", // the store published; Pi's branch does not record it yet
  "branch.appended", // Pi's branch records it; the tool result is not returned yet
] as const;

export type KillPoint = (typeof KILL_POINTS)[number];

function parseTarget(spec: string | undefined): Target {
  if (!spec) return null;
  const match = /^([a-z.]+)#([1-9]\d*)$/.exec(spec);
  if (!match || !(KILL_POINTS as readonly string[]).includes(match[1]!)) {
    throw new Error(
      `STATE_FLOW_KILL_AT=${JSON.stringify(spec)} must be <point>#<n> with a point of ${KILL_POINTS.join(", ")}`,
    );
  }
  return { point: match[1]!, hit: Number(match[2]) };
}

// Read at every arrival, so a process can be armed once it is past a phase the test wants
// unharmed (e.g. its recovery and one verified publication); arrivals count from the arming.
type Target = { point: string; hit: number } | null;
let armed: { spec: string | undefined; target: Target } = { spec: undefined, target: null };
let arrivals = 0;

// Tests only: a real concurrent process (a user's git command) can be run at exactly one step.
let observer: ((point: KillPoint) => void) | null = null;

/** Calls `fn` synchronously at every arrival at any point of this process (null: stop). */
export function observeKillPoints(fn: ((point: KillPoint) => void) | null): void {
  observer = fn;
}

/** Marks that this process reached `point`; kills it there when the crash matrix asked for it. */
export function killPoint(point: KillPoint): void {
  observer?.(point);
  const spec = process.env.STATE_FLOW_KILL_AT;
  if (spec !== armed.spec) {
    armed = { spec, target: parseTarget(spec) };
    arrivals = 0;
  }
  if (armed.target === null || armed.target.point !== point) return;
  arrivals += 1;
  if (arrivals === armed.target.hit) process.kill(process.pid, "SIGKILL");
}
