// Status text: the compact footer `state-flow #<step>` and the /state-flow-status report. The report
// leads with a summary in plain words (on, off, stopped or unavailable; the store; the remote; the
// state's size; the problems), then the details, which keep runtime config/meta apart from semantic
// materialization, label each scope without dumping bodies, and give each internal word its
// meaning. Evidence that could not be read is reported as unavailable, never as a clean zero.

import { projectArtifacts } from "../storage/core/artifacts.ts";
import { stateJson, type JsonObject } from "../storage/core/json.ts";
import {
  PROMOTION_STATUSES,
  memoryOwnership,
  readPromotions,
  type MemoryOwnership,
  type Promotions,
} from "../storage/core/promotions.ts";
import { SCOPES, type ScopeState } from "../storage/core/scope-state.ts";
import type { BranchState } from "../storage/state-store.ts";
import type { PendingPublication } from "../machines/publication.ts";
import type { ProjectionMode } from "../machines/episode-queries.ts";
import type { PublicationSummary } from "./publication.ts";
import type { SyncView } from "./sync.ts";
import { syncLines, waitingLine } from "./sync-report.ts";
import { availableOffsets, headBoundary, readTemporalState } from "../storage/core/temporal.ts";

export interface StatusInput {
  episode: string;
  /** What the branch is in plain terms (the episode's projection mode). */
  mode: ProjectionMode;
  /** Where publication stands (null: no publication open, i.e. no store bound). */
  remote: PublicationSummary | null;
  /** The publication the store still owes (null: nothing pending). */
  pending: PendingPublication | null;
  /** Where the store stands against the remote's (null: not on the remote route; absent: not asked). */
  sync?: SyncView | null;
  toolsActive: boolean;
  /** State Flow's tools the host could not make active although toolsActive asks for them. */
  missingTools: readonly string[];
  storeRoot: string;
  storeKind: "git" | "file" | "unopened";
  runtime: BranchState | null;
  /** Why the runtime could not be inspected, when it could not. */
  unavailable: string | null;
  publication: string;
  pendingTarget: string | null;
  /** The newest run's artifact_invalidations plan, or why there is none. */
  invalidations: readonly { path: string; reason: string }[] | { unavailable: string };
}

/**
 * Past this many tokens, state[0] (what every request carries) gets a one-line suggestion to
 * curate it. Information only: 001 allows no caps or gates, and nothing here refuses anything.
 * 8,000 tokens is ≈ 32 KB of JSON, about four times the bench's 8 KiB state and a twentieth of a
 * 200k-token context window, re-sent with every inference of every run.
 */
export const LARGE_STATE_TOKENS = 8_000;

/** Pi's own token estimate (estimateTokens: characters / 4, rounded up), without importing Pi. */
export const estimateTokens = (text: string): number => Math.ceil(text.length / 4);

/** The tokens a state takes as the runtime context renders it (stateJson, provenance stripped). */
function stateTokens(state: ScopeState): number {
  const artifacts = projectArtifacts(state.artifacts as JsonObject);
  return estimateTokens(stateJson({ ...state, artifacts }));
}

/** The size lines: per scope, the effective state[0] every request carries, and past the mark a suggestion. */
function sizeLines(rt: BranchState, effective: ScopeState): string[] {
  const scopes = SCOPES.map((s) => `${s} ${stateTokens(rt.view.current[s]).toLocaleString("en-US")}`);
  const total = stateTokens(effective);
  const lines = [
    `  state[0] size (tokens, Pi's estimate): ${scopes.join(", ")}; ` +
      `effective ${total.toLocaleString("en-US")}, added to every model request`,
  ];
  if (total > LARGE_STATE_TOKENS) {
    lines.push(
      `  notice: state[0] is past ${LARGE_STATE_TOKENS.toLocaleString("en-US")} tokens; consider curating it ` +
        "(/skill:state-flow-memory). Nothing is capped.",
    );
  }
  return lines;
}

/** The footer's detail after the accent `state-flow` label: the step. */
export function compactStatus(step: number): string {
  return `#${step}`;
}

/** Counts by status, then at most three pointers and three problems (bounded details). */
function promotionsLine(promotions: Promotions): string {
  const { valid, invalid } = promotions;
  if (valid.length === 0 && invalid.length === 0) return "none";
  const counts = PROMOTION_STATUSES.map((status) => [status, valid.filter((p) => p.status === status).length] as const)
    .filter(([, n]) => n > 0)
    .map(([status, n]) => `${n} ${status}`);
  if (invalid.length > 0) counts.push(`${invalid.length} invalid`);
  const details = [
    ...valid
      .filter((p) => p.status === "accepted")
      .slice(0, 3)
      .map((p) => `${p.id} → ${p.pointer} @ ${p.revision}`),
    ...valid
      .filter((p) => p.error)
      .slice(0, 3)
      .map((p) => `${p.id} ${p.status}: ${p.error}`),
    ...invalid.slice(0, 3).map((p) => `${p.id} invalid: ${p.problem}`),
  ];
  return `${counts.join(", ")}${details.length > 0 ? ` (${details.join("; ")})` : ""}`;
}

function ownerModeLine(ownership: MemoryOwnership): string {
  if (ownership.mode === "state-flow") return "State Flow alone — no accepted promotion; every body is held here";
  return (
    `State Flow, with copies held by ${ownership.externalOwners.join(", ")} — accepted promotions may have ` +
    "replaced their bodies here by pointers"
  );
}

/** Bounded: at most three promotions are named. */
function fallbackLine(ownership: MemoryOwnership): string {
  const { fallbacks } = ownership;
  if (fallbacks.length === 0) return "not active — no promotion failed or is of unknown outcome";
  const named = fallbacks.slice(0, 3).map(({ record, kept }) => {
    const body =
      kept === null
        ? "its record names no body"
        : kept
          ? `State Flow's ${record.body} is in use`
          : `its named body ${record.body} is MISSING from state`;
    return `${record.id} (${record.status}, ${record.owner}): ${body}`;
  });
  const more = fallbacks.length > named.length ? `; +${fallbacks.length - named.length} more` : "";
  return `active for ${fallbacks.length} promotion(s) — ${named.join("; ")}${more}`;
}

const isMaintenance = (i: { reason: string }) => i.reason === "maintenance";

/** The run's bounded maintenance selection (planArtifactMaintenance), apart from the stale ones. */
function maintenanceLine(invalidations: StatusInput["invalidations"]): string {
  if ("unavailable" in invalidations) return `unavailable (${invalidations.unavailable})`;
  const selected = invalidations.filter(isMaintenance).map((i) => i.path);
  return selected.length === 0
    ? "none selected for this run (no artifact is 30+ days old or of unknown age within the budget)"
    : `${selected.join(", ")} — this run's bounded selection to reread and recompile`;
}

function staleLine(all: StatusInput["invalidations"]): string {
  if ("unavailable" in all) return `unavailable (${all.unavailable})`;
  const invalidations = all.filter((i) => !isMaintenance(i));
  if (invalidations.length === 0) return "none (no discovered Knowledge source is new or known to be stale)";
  const counts = new Map<string, number>();
  for (const { reason } of invalidations) counts.set(reason, (counts.get(reason) ?? 0) + 1);
  const shown = invalidations.slice(0, 5).map((i) => `${i.path} (${i.reason})`);
  const more = invalidations.length > shown.length ? `, +${invalidations.length - shown.length} more` : "";
  const byReason = [...counts].map(([reason, n]) => `${n} ${reason}`).join(", ");
  return `${invalidations.length} (${byReason}): ${shown.join(", ")}${more}`;
}

function toolsLine(input: StatusInput): string {
  if (!input.toolsActive) return "tools off";
  if (input.missingTools.length === 0) return "tools active";
  return `tools NOT active: ${input.missingTools.join(", ")} left out by a tool allowlist or another extension`;
}

function stateLine(input: StatusInput): string {
  const step = input.runtime ? ` (step ${headBoundary(input.runtime.view.lineage).step})` : "";
  switch (input.mode) {
    case "active":
      return `State Flow: on${step} — the model works from the state below; runs leave the transcript`;
    case "bootstrapTranscript":
    case "bootstrapHandoff":
      return (
        `State Flow: on, migrating${step} — the next run still sees the conversation before the start, to ` +
        "carry what matters into state"
      );
    case "passive":
      return "State Flow: stopped — ordinary Pi since /state-flow-stop; the state is kept; /state-flow-start resumes";
    case "failedClosed":
      return `State Flow: unavailable — this branch's state could not be proven, so prompts are refused (${
        input.unavailable ?? "see the details"
      })`;
    default:
      return "State Flow: off — ordinary Pi on this branch; /state-flow-start turns it on";
  }
}

function storeLine(input: StatusInput): string {
  if (input.storeKind === "unopened") return `Store: ${input.storeRoot} (not opened in this session)`;
  const kind = input.storeKind === "git" ? "Git: every accepted change is a commit" : "files only (no Git)";
  return `Store: ${input.storeRoot} — ${kind}`;
}

function remoteLine(input: StatusInput): string | null {
  const remote = input.remote;
  if (!remote || input.storeKind !== "git") return null;
  const pending = input.pending;
  if (pending && remote.status === "waiting") return waitingLine(pending.revision, remote, input.sync ?? null);
  if (pending) {
    const why = pending.lastError ? ` (${pending.attempts} failed: ${pending.lastError})` : "";
    // (at work now: "pushed again after the next run" would be wrong)
    if (remote.status === "pushing") return `Remote: pushing ${pending.revision.slice(0, 12)} now${why}`;
    return (
      `Remote: pending — ${pending.revision.slice(0, 12)} is not pushed yet${why}; pushed again after the next ` +
      "run (/state-flow-sync tries now)"
    );
  }
  const last = remote.lastPushed;
  const name = last?.remote ? `${last.remote}: ` : "";
  switch (remote.status) {
    case "local-only":
      return "Remote: none — commits stay in the store (git -C <store> remote add … to publish them)";
    case "off":
      return 'Remote: not published — remotePublication is "off" for this branch';
    case "recovering":
    case "checking":
      return "Remote: being asked whether it has this branch's newest commit";
    case "queued":
    case "pushing":
      return `Remote: ${name}pushing the newest commit`;
    default:
      return last
        ? `Remote: ${name}up to date (last push ${last.revision.slice(0, 12)})`
        : "Remote: configured; nothing pushed in this session yet";
  }
}

function problemLines(input: StatusInput, effectiveTokens: number | null): string[] {
  const problems: string[] = [];
  if (input.toolsActive && input.missingTools.length > 0)
    problems.push(`State Flow's tools are not active (${input.missingTools.join(", ")}): runs are ordinary Pi`);
  const waiting = input.remote?.status === "waiting";
  if (input.pending?.lastError && !waiting)
    problems.push(`the remote refused or did not answer: ${input.pending.lastError}`);
  const open = input.sync?.open ?? [];
  if (open.length > 0)
    problems.push(`${open.map((c) => c.scope).join(", ")} changed here and on another machine: choose a side (Sync)`);
  const stale = "unavailable" in input.invalidations ? [] : input.invalidations.filter((i) => i.reason !== "refresh");
  const unwritten = stale.filter((i) => !isMaintenance(i)).length;
  if (unwritten > 0) problems.push(`${unwritten} Knowledge source(s) changed or new since their artifact was written`);
  if (effectiveTokens !== null && effectiveTokens > LARGE_STATE_TOKENS)
    problems.push(`the state is large (${effectiveTokens.toLocaleString("en-US")} tokens with every request)`);
  return problems.length === 0 ? ["Problems: none found"] : ["Problems:", ...problems.map((p) => `  - ${p}`)];
}

function summaryLines(input: StatusInput): string[] {
  const rt = input.unavailable ? null : input.runtime;
  const lines = [stateLine(input), storeLine(input)];
  const remote = remoteLine(input);
  if (remote) lines.push(remote);
  if (input.sync !== undefined && remote && input.remote && !["local-only", "off"].includes(input.remote.status))
    lines.push(...syncLines(input.sync));
  let effective: number | null = null;
  if (rt) {
    effective = stateTokens(readTemporalState(rt.view).state);
    const scopes = SCOPES.map((scope) => `${scope} ${stateTokens(rt.view.current[scope]).toLocaleString("en-US")}`);
    lines.push(
      `State size: ${scopes.join(", ")} tokens — ${effective.toLocaleString("en-US")} go with every model request`,
    );
  }
  lines.push(...problemLines(input, effective));
  return lines;
}

export function renderStatus(input: StatusInput): string {
  const lines = ["State Flow status", "", ...summaryLines(input), "", "Details", "", "Runtime (config and meta)"];
  lines.push(
    `  episode: ${input.episode} (${toolsLine(input)}) — the branch's State Flow lifecycle state ` +
      "(docs/state-machines.md, M1)",
  );
  lines.push(`  store: ${input.storeKind} at ${input.storeRoot}`);
  const rt = input.runtime;
  if (input.unavailable) {
    lines.push(`  runtime: unavailable — ${input.unavailable}`);
  } else if (!rt) {
    lines.push("  runtime: none on this branch (ordinary Pi mode; /state-flow-start enables it)");
  } else {
    const head = headBoundary(rt.view.lineage);
    lines.push(`  enabled: ${rt.config.enabled ? "yes" : "no"}    remote publication: ${rt.config.remotePublication}`);
    lines.push(`  scope keys: cwd ${rt.identity.cwdKey}    session ${rt.identity.sessionKey}`);
    lines.push(`  head: step ${head.step} (${head.id}) — the newest accepted transition`);
    lines.push(`  revision: ${rt.pointer.revision} — the commit (or file cohort) this branch is bound to`);
    lines.push(
      `  lineage: ${rt.view.lineage.id} from origin step ${rt.view.lineage.originStep} — this branch's line of ` +
        "history; steps before its origin cannot be read back",
    );
    const fork = rt.meta.fork;
    if (fork) {
      lines.push(
        `  forked from: session ${fork.sessionKey} at step ${fork.boundary.step} (${fork.boundary.id}, revision ` +
          `${fork.revision.slice(0, 17)}) — this session's state began as its own copy of that session's there`,
      );
    }
    lines.push(`  counters: ${rt.meta.counters.transitions} transitions, ${rt.meta.counters.runs} accepted runs`);
  }
  lines.push(
    `  publication: ${input.publication}${input.pendingTarget ? ` (pending ${input.pendingTarget})` : ""} — when ` +
      "commits are pushed to the store's remote, if it has one",
  );
  lines.push("", "Semantic materialization");
  if (input.unavailable) {
    lines.push("  unavailable (see runtime above)");
    return lines.join("\n");
  }
  if (!rt) {
    lines.push("  none");
    return lines.join("\n");
  }
  const offsets = availableOffsets(rt.view.lineage);
  lines.push(
    `  hot offsets: 0–${offsets - 1} (${offsets} available) — how many transitions back read_state can show state`,
  );
  lines.push(
    `  retained tails: ${SCOPES.map((s) => `${s} ${rt.view.streams[s].tail.length}`).join(", ")} ` +
      "— patch records kept after each scope's checkpoint (may include inherited pre-origin records)",
  );
  const effectiveState = readTemporalState(rt.view).state;
  lines.push(...sizeLines(rt, effectiveState));
  const counts = SCOPES.map((s) => `${s} ${Object.keys(rt.view.current[s].artifacts).length}`);
  const effective = Object.keys(effectiveState.artifacts).length;
  lines.push(`  artifacts: ${counts.join(", ")}, effective ${effective}`);
  lines.push(`  stale artifacts: ${staleLine(input.invalidations)}`);
  lines.push(`  maintenance: ${maintenanceLine(input.invalidations)}`);
  const bearing = SCOPES.filter((scope) => {
    const state = rt.view.current[scope];
    return Object.keys(state.contract).length + Object.keys(state.working).length > 0;
  });
  lines.push(`  memory-bearing scopes: ${bearing.length > 0 ? bearing.join(", ") : "none"}`);
  const promotions = readPromotions(rt.view.current.global.working.memory_promotions);
  const ownership = memoryOwnership(promotions, rt.view.current);
  lines.push(`  owner mode: ${ownerModeLine(ownership)}`);
  lines.push(`  fallback: ${fallbackLine(ownership)}`);
  lines.push(`  promotions: ${promotionsLine(promotions)}`);
  return lines.join("\n");
}
