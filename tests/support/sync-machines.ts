// Machines for the sync tests: each a Git store of its own (a new store with the bare remote as
// origin, or the remote cloned before its first start, as the README sets a second machine up) with
// the branch's publication over it, and the notices the person would read.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { BranchPublication } from "../../runtime/branch-publication.ts";
import type { BranchState } from "../../storage/state-store.ts";
import { openStore, type Store } from "../../storage/open-store.ts";
import { git, gitTestEnv, type TempDirs } from "./store-fixtures.ts";

/** Publishes `writes` (path → text) as one cohort; the new revision. */
export async function publishFiles(store: Store, writes: Record<string, string>): Promise<string> {
  const paths = Object.keys(writes);
  const basis = await store.loadCurrent(paths);
  const bytes = new Map(paths.map((path) => [path, Buffer.from(writes[path]!)]));
  return (await store.publish({ basis, writes: bytes })).pointer.revision;
}

export interface Notice {
  readonly text: string;
  readonly level: "info" | "warning";
}

/**
 * A machine: `bare` null has no remote; `clone` starts from a clone of it. `opened` collects the
 * publications for the caller's afterEach to close.
 */
export async function syncMachine(
  temps: TempDirs,
  opened: BranchPublication[],
  options: { bare: string | null; clone: boolean; name?: string },
) {
  const name = options.name ?? "s";
  const home = temps.make(`sf-sync-${name}-`);
  writeFileSync(join(home, "gitconfig"), "");
  const env = gitTestEnv(join(home, "gitconfig"));
  const root = join(home, "state-flow");
  if (options.clone && options.bare) git(home, env, "clone", "-q", options.bare, root);
  const store = await openStore({ root, env, initGit: true });
  if (!options.clone && options.bare) git(root, env, "remote", "add", "origin", options.bare);
  const notices: Notice[] = [];
  const publication = new BranchPublication((text, level) => notices.push({ text, level: level ?? "warning" }));
  opened.push(publication);
  const open = (revision: string) =>
    publication.open(
      {
        identity: { sessionKey: `2026-01-01T00-00-00-000Z_${name}` },
        config: { remotePublication: "turn-end" },
        pointer: { revision },
      } as unknown as BranchState,
      store.publication,
    );
  return { store, root, env, notices, publication, open };
}

/**
 * A machine's Git store with a git identity of its own: the first one a new store given `bare` as its
 * origin, every other one `bare` cloned before its first start (the README's second machine).
 */
export async function machineStore(temps: TempDirs, name: string, bare: string, first: boolean) {
  const home = temps.make(`sf-machine-${name}-`);
  writeFileSync(join(home, "gitconfig"), `[user]\n\tname = ${name}\n\temail = ${name}@machines.invalid\n`);
  const env = gitTestEnv(join(home, "gitconfig"));
  const root = join(home, "state-flow");
  if (!first) git(home, env, "clone", "-q", bare, root);
  const store = await openStore({ root, env, initGit: true });
  if (first) git(root, env, "remote", "add", "origin", bare);
  return { root, env, store };
}
