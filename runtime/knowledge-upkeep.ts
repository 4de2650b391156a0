// The Knowledge side of a branch: each enabled run's discovery (started beside the run, awaited
// before its first context), the global artifacts of sources that vanished, the retired
// `contract.compiled_skills` migration at start, the reads that oblige a compilation, and the
// refreshes a person asks for (/state-flow-refresh), which last until a run recompiles them.

import { realpathSync } from "node:fs";
import { basename, isAbsolute, join, relative, resolve } from "node:path";
import { parsePatchSet } from "../storage/core/cohort.ts";
import { StateFlowError, errorMessage } from "../storage/core/errors.ts";
import { scopeFiles } from "../storage/layout.ts";
import type { BranchState } from "../storage/state-store.ts";
import type { BranchBinding } from "./branch-binding.ts";
import type { BranchHost } from "./host.ts";
import { discoverKnowledge, sourceHash } from "./knowledge-discovery.ts";
import { KnowledgeRun, type Invalidations } from "./knowledge-run.ts";
import { planLegacySkills } from "./legacy-skills.ts";
import { legacySkillsNotice } from "./notices.ts";

export class KnowledgeUpkeep {
  /** The current run's Knowledge (discovery, plan, obligations); null before the first enabled run. */
  run: KnowledgeRun | null = null;
  /**
   * Sources a person asked to refresh on this branch, each until a run compiles it. Held in memory:
   * an explicit refresh is a request to the runs of this session, never a startup rebuild.
   */
  private readonly refreshes = new Set<string>();

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
    this.run = new KnowledgeRun(this.knowledgeRoot, metaPath, this.refreshes);
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

  /**
   * /state-flow-refresh: `all`, or one source (absolute, or relative to the Knowledge root), enters
   * the plan as `refresh` from the next context on; with no argument, what could be refreshed and
   * what is asked for. Reads no source. A path discovery does not find is refused by name
   * (`unknown-knowledge-source`) and changes nothing.
   */
  async requestRefresh(args: string): Promise<string> {
    const found = await discoverKnowledge(this.knowledgeRoot);
    const sources = found.sources.map((source) => source.path);
    const shown = (paths: readonly string[]) =>
      `${paths
        .slice(0, 8)
        .map((p) => relative(found.root, p))
        .join(", ")}${paths.length > 8 ? ", …" : ""}`;
    const wanted = args.trim();
    if (wanted === "") {
      const asked = [...this.refreshes].sort();
      return (
        `Knowledge sources under ${found.root}: ${sources.length === 0 ? "none" : shown(sources)}. Refresh asked ` +
        `for: ${asked.length === 0 ? "none" : shown(asked)}. /state-flow-refresh <source> or all asks for one.`
      );
    }
    if (sources.length === 0) {
      throw new StateFlowError(
        "unknown-knowledge-source",
        `There is no Knowledge source to refresh: discovery finds no *.md under ${found.root}. Add Markdown ` +
          "there, then ask again. Nothing changed.",
      );
    }
    const paths = wanted === "all" ? sources : [this.sourceOf(found.root, wanted, sources)];
    for (const path of paths) this.refreshes.add(path);
    return (
      `Refresh asked for ${paths.length} Knowledge source(s): ${shown(paths)}. From the next model request they ` +
      "are listed under Artifact invalidations (refresh, or new without an artifact); the model reads and " +
      "recompiles them there, which settles the request. Nothing was read now."
    );
  }

  private sourceOf(root: string, wanted: string, sources: readonly string[]): string {
    const candidates = [resolve(root, wanted)];
    if (isAbsolute(wanted)) {
      try {
        candidates.push(realpathSync(wanted));
      } catch {
        // not there: refused below
      }
    }
    const path = candidates.find((candidate) => sources.includes(candidate));
    if (path) return path;
    throw new StateFlowError(
      "unknown-knowledge-source",
      `${wanted} is not a Knowledge source: discovery under ${root} finds ${sources
        .slice(0, 8)
        .map((p) => relative(root, p))
        .join(", ")}${sources.length > 8 ? ", …" : ""}. Give one of them (relative to that root, or absolute), ` +
        "or /state-flow-refresh all. Nothing changed.",
    );
  }
}
