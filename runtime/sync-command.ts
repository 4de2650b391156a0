// /state-flow-sync: fetch now and bring another machine's changes in (fast-forward or join), or —
// for a scope this machine and another changed — choose a side: `keep-local [scope]` or
// `take-remote [scope]`. A pending push that failed (the remote did not answer) is retried too.
// Every refusal says what was wrong and what to run instead.

import type { BranchPublication } from "./branch-publication.ts";
import { syncLines } from "./sync-report.ts";

export interface SyncAnswer {
  readonly text: string;
  readonly refused: boolean;
}

const USAGE =
  "Usage: /state-flow-sync (fetch now and bring another machine's changes in), /state-flow-sync keep-local " +
  "[scope] or /state-flow-sync take-remote [scope] (for a scope changed here and on another machine).";

export async function runSyncCommand(publication: BranchPublication, args: string): Promise<SyncAnswer> {
  const words = args.trim().split(/\s+/).filter(Boolean);
  if (words.length === 0) {
    if (publication.syncView === null)
      return { text: syncLines(null).join("\n"), refused: publication.summary === null };
    const before = publication.summary?.lastPushed?.revision ?? null;
    await publication.sync(); // the person asked: what it started (a push) is done before the answer
    const lines = [...syncLines(publication.syncView), ...pushedLine(publication, before)];
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
  const side = choice === "keep-local" ? "local" : choice === "take-remote" ? "remote" : null;
  if (side === null) return { text: `${USAGE}\n"${args.trim()}" is not one of them.`, refused: true };
  // The choice applies to what the remote holds now (a new Pi process has not classified yet): fetch first.
  const view = publication.syncView === null ? null : await publication.sync();
  if (!view || (view.state !== "diverged" && view.state !== "unrelated") || view.open.length === 0) {
    if (view?.state === "unrelated" && side === "remote") {
      const before = publication.summary?.lastPushed?.revision ?? null;
      await publication.choose(side);
      const lines = [...syncLines(publication.syncView), ...pushedLine(publication, before)];
      return { text: lines.join("\n"), refused: false };
    }
    return {
      text: [`Nothing to choose: no scope is changed here and on another machine.`, ...syncLines(view)].join("\n"),
      refused: true,
    };
  }
  // A scope is named as status names it ("global", "cwd <key>", "session <keys>"); "cwd" alone names the only one.
  const scopes = view.open.map((c) => c.scope);
  const rejoined = scopeWords.length === 0 ? undefined : scopeWords.join(" ");
  const scope = rejoined === undefined ? undefined : scopes.find((s) => s === rejoined || s.split(" ")[0] === rejoined);
  if (rejoined !== undefined && scope === undefined)
    return {
      text: `"${rejoined}" is not a scope changed here and on another machine; those are: ${scopes.join(", ")}.`,
      refused: true,
    };
  const before = publication.summary?.lastPushed?.revision ?? null;
  await publication.choose(side, scope);
  return { text: [...syncLines(publication.syncView), ...pushedLine(publication, before)].join("\n"), refused: false };
}

/** What the push the command started did, in one line (none when it pushed nothing new). */
function pushedLine(publication: BranchPublication, before: string | null): string[] {
  const summary = publication.summary;
  const last = summary?.lastPushed;
  if (summary?.status === "confirmed" && last && last.revision !== before)
    return [`Pushed ${last.revision.slice(0, 12)} to ${last.remote ?? "the remote"}.`];
  return [];
}

function whyNot(outcome: Awaited<ReturnType<BranchPublication["retry"]>>): string {
  return "error" in outcome ? outcome.error : outcome.kind;
}
