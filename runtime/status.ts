// Status text: the compact footer `state-flow #<step>` and the detailed /state-flow-status report,
// which keeps runtime config/meta apart from semantic materialization and labels each scope
// without dumping bodies. Evidence that could not be read is reported as unavailable, never as
// a clean zero.

import { projectArtifacts } from "../storage/core/artifacts.ts";
import type { JsonObject } from "../storage/core/json.ts";
import { PROMOTION_STATUSES, readPromotions, type Promotions } from "../storage/core/promotions.ts";
import { SCOPES, type ScopeState } from "../storage/core/scope-state.ts";
import type { BranchState } from "../storage/state-store.ts";
import { availableOffsets, headBoundary, readTemporalState } from "../storage/core/temporal.ts";

export interface StatusInput {
  episode: string;
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

/** The tokens a state takes as the runtime context renders it (indented JSON, provenance stripped). */
function stateTokens(state: ScopeState): number {
  const artifacts = projectArtifacts(state.artifacts as JsonObject);
  return estimateTokens(JSON.stringify({ ...state, artifacts }, null, 2));
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

export function compactStatus(step: number | null): string {
  return step === null ? "state-flow" : `state-flow #${step}`;
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

function staleLine(invalidations: StatusInput["invalidations"]): string {
  if ("unavailable" in invalidations) return `unavailable (${invalidations.unavailable})`;
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

export function renderStatus(input: StatusInput): string {
  const lines = ["State Flow status", "", "Runtime (config and meta)"];
  lines.push(`  episode: ${input.episode} (${toolsLine(input)})`);
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
    lines.push(`  head: step ${head.step} (${head.id})    revision: ${rt.pointer.revision}`);
    lines.push(`  lineage: ${rt.view.lineage.id} from origin step ${rt.view.lineage.originStep}`);
    lines.push(`  counters: ${rt.meta.counters.transitions} transitions, ${rt.meta.counters.runs} accepted runs`);
  }
  lines.push(`  publication: ${input.publication}${input.pendingTarget ? ` (pending ${input.pendingTarget})` : ""}`);
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
  lines.push(`  hot offsets: 0–${offsets - 1} (${offsets} available)`);
  lines.push(
    `  retained tails: ${SCOPES.map((s) => `${s} ${rt.view.streams[s].tail.length}`).join(", ")} ` +
      "(may include inherited pre-origin records)",
  );
  const effectiveState = readTemporalState(rt.view).state;
  lines.push(...sizeLines(rt, effectiveState));
  const counts = SCOPES.map((s) => `${s} ${Object.keys(rt.view.current[s].artifacts).length}`);
  const effective = Object.keys(effectiveState.artifacts).length;
  lines.push(`  artifacts: ${counts.join(", ")}, effective ${effective}`);
  lines.push(`  stale artifacts: ${staleLine(input.invalidations)}`);
  const bearing = SCOPES.filter((scope) => {
    const state = rt.view.current[scope];
    return Object.keys(state.contract).length + Object.keys(state.working).length > 0;
  });
  lines.push(
    `  memory: owned by State Flow; memory-bearing scopes: ${bearing.length > 0 ? bearing.join(", ") : "none"}`,
  );
  lines.push(`  promotions: ${promotionsLine(readPromotions(rt.view.current.global.working.memory_promotions))}`);
  return lines.join("\n");
}
