// What a person reads of the sync with the publication remote (/state-flow-sync and the status):
// where this machine's store stands against the remote's, what came in, and — for a scope both
// machines changed — the scope, both revisions, the changed paths and the two commands that settle
// it. Words a Pi user knows: "another machine (remote origin)", not refs and merge bases.

import type { SyncArrival } from "../machines/sync.ts";
import type { SyncView } from "./sync.ts";

const short = (revision: string | null) => (revision ?? "(none)").slice(0, 12);

function conflictLines(view: SyncView): string[] {
  const f = view.finding!;
  // State paths where the scope's state could be read, else the files.
  const lines = view.open.map((c) => {
    const mine = c.localChanges?.length ? c.localChanges : c.localPaths;
    const theirs = c.remoteChanges?.length ? c.remoteChanges : c.remotePaths;
    return `  - ${c.scope}: this machine changed ${mine.join(", ")}; the remote changed ${theirs.join(", ")}`;
  });
  const scopes = view.open.map((c) => c.scope);
  const one = scopes.length === 1 ? "" : " [scope]";
  lines.push(
    `Nothing was merged, and this machine's changes wait (they are not pushed). Choose a side ` +
      `${scopes.length === 1 ? "" : "for each scope, or for all at once "}— both stay in the history:`,
    `  /state-flow-sync keep-local${one}   keeps this machine's values (${short(f.local)}) for ${scopes.join(", ")}`,
    `  /state-flow-sync take-remote${one}  takes the remote's values (${short(f.remoteHead)})`,
  );
  if (scopes.some((scope) => !scope.startsWith("session ")))
    lines.push(`  /state-flow-sync re-apply${one}     applies this machine's changes again on top of the remote's`);
  return lines;
}

/** What became of this machine's transitions in each scope chosen "re-apply". */
function reappliedLines(arrival: SyncArrival | null): string[] {
  return Object.entries(arrival?.reapplied ?? {}).map(([scope, { applied, present }]) => {
    const held = present > 0 ? ` (${present} the remote already held)` : "";
    const count = `${applied} transition${applied === 1 ? "" : "s"}`;
    return `Re-applied on the remote's ${scope}: ${count} of this machine${held}`;
  });
}

/** The sync's standing in a few lines (first line: the summary status shows). */
export function syncLines(view: SyncView | null): string[] {
  if (!view) return ["Sync: no remote to share state with (git -C <store> remote add origin <url> to add one)"];
  const f = view.finding;
  const remote = f?.remote ? `remote ${f.remote}` : "the remote";
  const arrived = view.arrival
    ? [
        `Last brought in: ${view.arrival.scopes.join(", ") || "no scope"} from another machine (remote ` +
          `${view.arrival.remote}) at ${short(view.arrival.revision)}`,
        ...reappliedLines(view.arrival),
      ]
    : [];
  switch (view.state) {
    case "idle":
      return ["Sync: not fetched yet in this session (/state-flow-sync fetches now)"];
    case "fetching":
    case "fastForwarding":
    case "joining":
      return [`Sync: fetching and bringing in ${remote}'s changes…`];
    case "equal":
      return [`Sync: up to date with ${remote} (${short(f?.local ?? null)})`, ...arrived];
    case "ahead":
      return [`Sync: ${remote} lacks this machine's newest changes; they are pushed`, ...arrived];
    case "behind":
      return [
        `Sync: another machine (${remote}) has newer changes; bringing them in failed: ${view.error ?? "unknown"}. ` +
          "/state-flow-sync tries again.",
      ];
    case "diverged":
      if (view.open.length === 0)
        return [`Sync: joining with another machine's line (${remote}) failed: ${view.error ?? "unknown"}`];
      return [
        `Sync: this machine and another machine (${remote}) both changed ${view.open.map((c) => c.scope).join(", ")}:`,
        ...conflictLines(view),
      ];
    case "unrelated": {
      const head =
        `Sync: ${remote} holds a history unrelated to this store's (no common commit); nothing was merged, ` +
        "and nothing is ever force-pushed.";
      if (f?.localStartOnly)
        return [head, "This store holds only its start: /state-flow-sync take-remote adopts the remote's state."];
      return view.open.length > 0 ? [head, ...conflictLines(view)] : [head, "/state-flow-sync take-remote joins them."];
    }
    case "unreachable":
      return [
        `Sync: could not fetch ${remote}: ${f?.detail ?? view.error ?? "no answer"}. Work goes on locally; ` +
          "/state-flow-sync tries again.",
      ];
    default:
      return [`Sync: ${view.state}`];
  }
}

/** The status's remote line while a push waits for another machine's changes to come in. */
export function waitingLine(
  pending: string,
  summary: { readonly lastPushed: { readonly remote: string | null } | null } | null,
  view: SyncView | null,
): string {
  const remote = view?.finding?.remote ?? summary?.lastPushed?.remote ?? "the remote";
  return (
    `Remote: waiting — another machine (remote ${remote}) published first; ${pending.slice(0, 12)} is pushed ` +
    "once its changes are brought in (see Sync)"
  );
}

/** The one line a person reads when another machine's line came in. */
export function arrivalNotice(arrival: SyncArrival, joined: boolean): string {
  const scopes = arrival.scopes.length > 0 ? arrival.scopes.join(", ") : "no scope";
  const how = joined ? "joined with this machine's line" : "fast-forwarded";
  return (
    `State Flow: brought in another machine's changes (remote ${arrival.remote}; ${scopes}), ${how} at ` +
    `${arrival.revision.slice(0, 12)}; sessions adopt them at their next run.`
  );
}

/** The one line a person reads when a push waits for another machine's changes to come in. */
export function heldNotice(revision: string): string {
  return (
    `State Flow: another machine published to the remote first, so ${revision.slice(0, 12)} is held, not pushed ` +
    "again after every run; State Flow is bringing that machine's changes in (/state-flow-sync shows where it " +
    "stands)."
  );
}
