// The Knowledge side of a branch: each enabled run's discovery (started beside the run, awaited
// before its first context), the global artifacts of sources that vanished, the retired
// `contract.compiled_skills` migration at start, and the reads that oblige a compilation.

import { basename, join } from "node:path";
import { parsePatchSet } from "../storage/core/cohort.ts";
import { StateFlowError, errorMessage } from "../storage/core/errors.ts";
import { scopeFiles } from "../storage/layout.ts";
import type { BranchState } from "../storage/state-store.ts";
import type { BranchBinding } from "./branch-binding.ts";
import type { BranchHost } from "./host.ts";
import { sourceHash } from "./knowledge-discovery.ts";
import { KnowledgeRun, type Invalidations } from "./knowledge-run.ts";
import { planLegacySkills } from "./legacy-skills.ts";
import { legacySkillsNotice } from "./notices.ts";

export class KnowledgeUpkeep {
  /** The current run's Knowledge (discovery, plan, obligations); null before the first enabled run. */
  run: KnowledgeRun | null = null;

  private readonly binding: BranchBinding;
  private readonly host: BranchHost;
  private readonly knowledgeRoot: string;

  constructor(binding: BranchBinding, host: BranchHost, knowledgeRoot: string) {
    this.binding = binding;
    this.host = host;
    this.knowledgeRoot = knowledgeRoot;
  }

  /** Discovery runs beside the run's start (never on the activation path) and is awaited before its first context. */
  startDiscovery(): void {
    const { identity, options } = this.binding;
    const metaPath = identity ? join(options.storeRoot, scopeFiles("global", identity).meta) : null;
    this.run = new KnowledgeRun(this.knowledgeRoot, metaPath);
  }

  /**
   * The run's discovery, then the removal of vanished sources' artifacts: the run machine's
   * `discoverKnowledge` actor, invoked once per equipped run (at once when no run discovers).
   */
  async ready(): Promise<void> {
    if (!this.run) return;
    await this.run.ready();
    await this.removeVanishedSources();
  }

  /**
   * Sources discovery no longer finds lose their global artifacts and provenance in one runtime
   * transition: deterministic, no read, no model call. A shared-scope conflict is retried once on
   * the re-read view; a failure is said and leaves the artifacts for the next run.
   */
  private async removeVanishedSources(): Promise<void> {
    const { store, state } = this.binding;
    if (!state || !store || !this.run) return;
    const plan = this.run.plan(state);
    if ("unavailable" in plan || plan.removed.length === 0) return;
    const artifacts = Object.fromEntries(plan.removed.map((path) => [path, null]));
    const { patches } = parsePatchSet({ global: { artifacts } });
    const message = `state-flow: knowledge removed ${plan.removed.length} source(s)`;
    const options = { prune: { global: plan.prune } };
    try {
      const committed = await store.commit(state, patches, message, options).catch(async (error: unknown) => {
        if (!(error instanceof StateFlowError && error.code === "shared-scope-advanced")) throw error;
        this.binding.state = await store.refresh(state);
        return store.commit(this.binding.state, patches, message, options);
      });
      await this.binding.accept(committed.runtime);
    } catch (error) {
      this.host.notify(
        `State Flow could not remove the artifacts of ${plan.removed.join(", ")}, whose sources are gone ` +
          `(${errorMessage(error)}); the next run tries again.`,
        "warning",
      );
    }
  }

  /**
   * Retired `contract.compiled_skills` stores become Skill artifacts in one runtime transition with
   * their provenance; said once. A failure is said and leaves them for the next start.
   */
  async migrateLegacySkills(): Promise<void> {
    const { store, state, identity } = this.binding;
    if (!state || !store || !identity) return;
    const plan = planLegacySkills(state.view.current, identity.cwd, sourceHash);
    if (!plan) return;
    try {
      const { patches } = parsePatchSet(plan.input);
      const message = "state-flow: migrate contract.compiled_skills into Skill artifacts";
      const committed = await store.commit(state, patches, message, { provenance: plan.provenance });
      await this.binding.accept(committed.runtime, false); // part of start: never waits on a push
      this.host.notify(legacySkillsNotice(plan.migrated), "info");
    } catch (error) {
      this.host.notify(
        `State Flow could not migrate contract.compiled_skills into Skill artifacts (${errorMessage(error)}); ` +
          "the next start tries again.",
        "warning",
      );
    }
  }

  /**
   * A successful read of `path` (absolute, as executed): a `SKILL.md` obliges its Skill
   * compilation; any other path, whatever the run's Knowledge plan says it obliges.
   */
  sourceRead(path: string): void {
    const { state } = this.binding;
    if (!state) return;
    if (basename(path) === "SKILL.md") this.run?.skillRead(path);
    else this.run?.sourceRead(state, path);
  }

  invalidations(state: BranchState): Invalidations {
    return this.run?.invalidations(state) ?? { unavailable: "no enabled run has discovered Knowledge yet" };
  }
}
