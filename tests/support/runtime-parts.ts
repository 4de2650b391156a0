// The runtime's parts over a real store, without FlowRuntime and without Pi: a binding to a fresh
// store (Git in a temp repository, or file-only), its publication, the Knowledge upkeep and the
// episode actors, for the tests of each part.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BranchBinding, memoryCell } from "../../runtime/branch-binding.ts";
import { EpisodeActors } from "../../runtime/episode-actors.ts";
import { KnowledgeUpkeep } from "../../runtime/knowledge-upkeep.ts";
import { BranchPublication } from "../../runtime/branch-publication.ts";
import type { SessionIdentity } from "../../runtime/session-identity.ts";
import type { PublicationPolicy } from "../../storage/core/codec.ts";
import { cwdKey } from "../../storage/layout.ts";
import { RecordingHost } from "./recording-host.ts";
import { gitTestEnv } from "./store-fixtures.ts";

export interface Parts {
  root: string;
  /** The environment git runs with (the binding's: a test may change it, e.g. install git later). */
  env: NodeJS.ProcessEnv;
  host: RecordingHost;
  binding: BranchBinding;
  publication: BranchPublication;
  knowledge: KnowledgeUpkeep;
  actors: EpisodeActors;
  /** How often the binding told of a new revision. */
  revisions: { count: number };
  dispose(): void;
}

export interface PartsOptions {
  /** The publication policy a new origin is started with (default turn-end). */
  readonly policy?: PublicationPolicy;
  /** Added to git's environment (e.g. an ssh command that reaches a blocking remote). */
  readonly env?: Record<string, string>;
}

export function runtimeParts(git: boolean, options: PartsOptions = {}): Parts {
  const base = mkdtempSync(join(tmpdir(), "sf-parts-"));
  const cfg = join(base, "gitconfig");
  writeFileSync(cfg, "");
  const env = { ...gitTestEnv(cfg), ...(git ? {} : { PATH: join(base, "no-git") }), ...options.env };
  const cwd = join(base, "project");
  const identity: SessionIdentity = {
    cwd,
    cwdKey: cwdKey(cwd),
    sessionId: "11111111-2222-7333-8444-555555555555",
    sessionKey: "2026-01-01T00-00-00-000Z_11111111-2222-7333-8444-555555555555",
  };
  const host = new RecordingHost(identity.sessionId);
  const publication = new BranchPublication((m) => host.notify(m, "warning"));
  const revisions = { count: 0 };
  const root = join(base, "store");
  const binding = new BranchBinding(
    host,
    { storeRoot: root, env },
    publication,
    () => revisions.count++,
    memoryCell(identity),
  );
  const knowledge = new KnowledgeUpkeep(binding, host, join(base, "knowledge"));
  const actors = new EpisodeActors(binding, host, publication, knowledge, options.policy ?? "turn-end");
  return {
    root,
    env,
    host,
    binding,
    publication,
    knowledge,
    actors,
    revisions,
    dispose: () => {
      publication.shutdown();
      rmSync(base, { recursive: true, force: true });
    },
  };
}
