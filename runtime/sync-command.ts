// /state-flow-sync: fetch now and bring another machine's changes in (fast-forward or join), or —
// for a scope this machine and another changed — choose: `keep-local [scope]`, `take-remote [scope]`
// or `re-apply [scope]` (this machine's transitions as new ones on top of the remote's state). A
// pending push that failed (the remote did not answer) is retried too. Every refusal says what was
// wrong and what to run instead.

import type { Side } from "../machines/sync.ts";
import type { BranchPublication } from "./branch-publication.ts";
import { syncLines } from "./sync-report.ts";

export interface SyncAnswer {
  readonly text: string;
  readonly refused: boolean;
}

const USAGE =
  "Usage: /state-flow-sync (fetch now and bring another machine's changes in), or, for a scope changed here and " +
  "on another machine, /state-flow-sync keep-local [scope], /state-flow-sync take-remote [scope] or " +
  "/state-flow-sync re-apply [scope].";

const SIDES: Readonly<Record<string, Side>> = { "keep-local": "local", "take-remote": "remote", "re-apply": "reapply" };

export async function runSyncCommand(publication: BranchPublication, args: string): Promise<SyncAnswer> {
  const words = args.trim().split(/\s+/).filter(Boolean);
  if (words.length === 0) {
    if (publication.syncView === null)
      return { text: syncLines(null).join("\n"), refused: publication.summary === null };
    const lines = await answered(publication, () => publication.sync()); // what it started (a push) is done too
    const pending = publication.pending;
    if (pending && publication.summary?.status === "pending") {
      const outcome = await publication.retry();
      lines.push(
        outcome.kind === "pushed"
          ? `Pushed ${pending.revision.slice(0, 12)}, which had been waiting for the remote.`
          : `${pending.revision.slice(0, 12)} is still not pushed: ${whyNot(outcome)}`,
      );
    }
    return { text: lines.join("\n"), refused: false };
  }
  const [choice, ...scopeWords] = words;
  const side = Object.hasOwn(SIDES, choice!) ? SIDES[choice!] : undefined;
  if (side === undefined) return { text: `${USAGE}\n"${args.trim()}" is not one of them.`, refused: true };
  // The choice applies to what the remote holds now (a new Pi process has not classified yet): fetch first.
  const view = publication.syncView === null ? null : await publication.sync();
  if (!view || (view.state !== "diverged" && view.state !== "unrelated") || view.open.length === 0) {
    if (view?.state === "unrelated" && side === "remote")
      return { text: (await answered(publication, () => publication.choose(side))).join("\n"), refused: false };
    return {
      text: [`Nothing to choose: no scope is changed here and on another machine.`, ...syncLines(view)].join("\n"),
      refused: true,
    };
  }
  // A scope is named as status names it ("global", "cwd <key>", "session <keys>"); "cwd" alone names the only one.
  const scopes = view.open.map((c) => c.scope);
  const rejoined = scopeWords.length === 0 ? undefined : scopeWords.join(" ");
  const matches = scopes.filter((s) => s === rejoined || s.split(" ")[0] === rejoined);
  const exact = scopes.find((s) => s === rejoined);
  if (rejoined !== undefined && exact === undefined && matches.length !== 1)
    return {
      text:
        matches.length === 0
          ? `"${rejoined}" is not a scope changed here and on another machine; those are: ${scopes.join(", ")}.`
          : `"${rejoined}" names ${matches.length} scopes changed here and on another machine: ` +
            `${matches.join(", ")}. Name one of them whole, e.g. /state-flow-sync ${choice} ${matches[0]}.`,
      refused: true,
    };
  const scope = rejoined === undefined ? undefined : (exact ?? matches[0]);
  if (side === "reapply") {
    const unshared = (scope === undefined ? scopes : [scope]).filter((s) => s.startsWith("session "));
    if (unshared.length > 0)
      return {
        text:
          `${unshared.join(", ")} cannot be re-applied: only the global and cwd scopes are shared between ` +
          `machines. Choose a side for ${unshared.length === 1 ? "it" : "them"}: /state-flow-sync keep-local ` +
          `${unshared[0]} or /state-flow-sync take-remote ${unshared[0]}.`,
        refused: true,
      };
  }
  return { text: (await answered(publication, () => publication.choose(side, scope))).join("\n"), refused: false };
}

/** Runs what the person asked and says where the sync stands now, and what the push it started did. */
async function answered(publication: BranchPublication, work: () => Promise<unknown>): Promise<string[]> {
  const before = publication.summary?.lastPushed?.revision ?? null;
  await work();
  const summary = publication.summary;
  const last = summary?.lastPushed;
  const pushed =
    summary?.status === "confirmed" && last && last.revision !== before
      ? [`Pushed ${last.revision.slice(0, 12)} to ${last.remote ?? "the remote"}.`]
      : [];
  return [...syncLines(publication.syncView), ...pushed];
}

function whyNot(outcome: Awaited<ReturnType<BranchPublication["retry"]>>): string {
  return "error" in outcome ? outcome.error : outcome.kind;
}
