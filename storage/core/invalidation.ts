// The artifact invalidation plan: which discovered Knowledge sources need (re)compilation and
// why, and which artifacts lost their source. Pure: it takes discovery's observations (path →
// hash and byte count), the scope's recorded provenance and artifacts, and returns a plan; it
// reads no source and changes nothing.
//
// Why these rules: freshness is derived from whatever evidence exists. A source without an artifact
// is new; a valid recorded hash that differs means the source changed; a valid compiler revision
// that differs means the compiler moved on; malformed hash or revision evidence fails closed (the
// artifact is invalidated) because the capability it enables cannot be trusted. Missing evidence
// only leaves freshness unknown: the artifact stays usable and is not invalidated. compiledAt is
// never a correctness signal here (only maintenance ranks by it).

import { compareSourcePaths } from "./artifacts.ts";
import { StateFlowError } from "./errors.ts";
import { type JsonObject } from "./json.ts";
import { ARTIFACT_COMPILER_REVISION, isSourceHash, provenanceEvidence, type ProvenanceSection } from "./provenance.ts";

/** Every invalidation reason, in precedence order: a path invalid for several reasons reports the first. */
export const INVALIDATION_REASONS = ["new", "changed", "malformed", "compiler-stale", "refresh"] as const;
export type InvalidationReason = (typeof INVALIDATION_REASONS)[number];

/** One entry of `artifact_invalidations`, exactly what the model is shown. */
export interface ArtifactInvalidation {
  readonly path: string;
  readonly reason: InvalidationReason;
}

/** What discovery observed of one source: its `sha256:<hex>` byte hash and byte count (never its body). */
export interface DiscoveredSource {
  readonly hash: string;
  readonly bytes: number;
}

export interface FreshnessInput {
  /** The Knowledge source root discovery walked; `*.md` artifact paths beneath it are its sources. */
  readonly root: string;
  /** Every source discovery found, keyed by exact path. */
  readonly sources: ReadonlyMap<string, DiscoveredSource>;
  /** The scope's semantic artifacts (the scope Knowledge compiles into, normally global). */
  readonly artifacts: JsonObject;
  /** The same scope's recorded provenance. */
  readonly provenance: ProvenanceSection;
  /** Paths explicitly asked to be recompiled; a full refresh lists every source. */
  readonly refresh?: Iterable<string>;
  /** The compiler revision artifacts must carry to be fresh; `artifact-v1` unless stated. */
  readonly compilerRevision?: string;
}

export interface InvalidationPlan {
  /** Sources to acquire and compile, in `compareSourcePaths` order. */
  readonly invalidations: ArtifactInvalidation[];
  /** Artifacts whose source discovery no longer finds: removed without reads or compilation. */
  readonly removed: string[];
  /** Provenance entries to drop: the removed paths and entries whose artifact no longer exists. */
  readonly prune: string[];
}

function refuse(message: string, path?: string): never {
  throw new StateFlowError("invalid-plan-input", message, path);
}

/**
 * Whether `path` is one discovery would report under `root`: beneath it, with only ordinary path
 * segments (no `.`, `..` or empty ones, which discovery never produces), ending in lowercase `.md`.
 * Only such artifacts can lose their source; artifacts of other files are not Knowledge's to remove.
 */
export function isKnowledgeSourcePath(root: string, path: string): boolean {
  const base = root.replace(/\/+$/, "");
  if (!path.startsWith(`${base}/`) || !path.endsWith(".md")) return false;
  return path
    .slice(base.length + 1)
    .split("/")
    .every((segment) => segment.length > 0 && segment !== "." && segment !== "..");
}

function ownEntry(artifacts: JsonObject, path: string): JsonObject[string] | undefined {
  return Object.prototype.hasOwnProperty.call(artifacts, path) ? artifacts[path] : undefined;
}

/** Checks discovery's observations, so a planner never judges freshness against a garbled hash. */
export function assertFreshnessInput(input: FreshnessInput): void {
  if (typeof input.root !== "string" || input.root.length === 0) refuse("root must be the non-empty source root");
  for (const [path, source] of input.sources) {
    if (typeof path !== "string" || path.length === 0) refuse("a discovered source path must be a non-empty string");
    if (!isSourceHash(source?.hash)) refuse("the discovered hash must be sha256:<64 lowercase hex characters>", path);
    if (!Number.isSafeInteger(source.bytes) || source.bytes < 0) {
      refuse("the discovered byte count must be a non-negative integer", path);
    }
  }
  const revision = input.compilerRevision;
  if (revision !== undefined && (typeof revision !== "string" || revision.length === 0)) {
    refuse("compilerRevision must be a non-empty string");
  }
}

/** Why `path` (a discovered source) needs compilation, or `undefined` when it does not. */
function reasonFor(input: FreshnessInput, path: string, source: DiscoveredSource, refresh: ReadonlySet<string>) {
  const artifact = ownEntry(input.artifacts, path);
  if (artifact === undefined) return "new";
  const evidence = provenanceEvidence(input.provenance, path, artifact);
  const { sourceHash, compilerRevision } = evidence;
  if (sourceHash.status === "valid" && sourceHash.value !== source.hash) return "changed";
  if (sourceHash.status === "malformed" || compilerRevision.status === "malformed") return "malformed";
  const current = input.compilerRevision ?? ARTIFACT_COMPILER_REVISION;
  if (compilerRevision.status === "valid" && compilerRevision.value !== current) return "compiler-stale";
  return refresh.has(path) ? "refresh" : undefined;
}

/**
 * The runtime-owned `artifact_invalidations` plan plus the removals discovery implies. Every list
 * is in `compareSourcePaths` order, so equal inputs always give equal plans. A refresh request for
 * a path discovery did not find is ignored (there is nothing to read); if that path has an
 * artifact beneath the root, it is listed as removed instead.
 */
export function planArtifactInvalidations(input: FreshnessInput): InvalidationPlan {
  assertFreshnessInput(input);
  const refresh = new Set(input.refresh ?? []);
  const invalidations: ArtifactInvalidation[] = [];
  for (const [path, source] of input.sources) {
    const reason = reasonFor(input, path, source, refresh);
    if (reason !== undefined) invalidations.push({ path, reason });
  }
  invalidations.sort((a, b) => compareSourcePaths(a.path, b.path));
  const removed = Object.keys(input.artifacts)
    .filter((path) => isKnowledgeSourcePath(input.root, path) && !input.sources.has(path))
    .sort(compareSourcePaths);
  const orphaned = [...input.provenance.entries.keys()].filter((path) => ownEntry(input.artifacts, path) === undefined);
  const prune = [...new Set([...removed, ...orphaned])].sort(compareSourcePaths);
  return { invalidations, removed, prune };
}
