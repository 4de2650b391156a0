// The Git backend tests' shared setup: a store repository opened by openGitBackend in an isolated
// home (its own empty global config, a fixed identity unless asked otherwise) and the cohort
// they publish, so that the tests of each backend module start from the same repository.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { openGitBackend } from "../../storage/git/git-backend.ts";
import { findGitExecutable } from "../../storage/git/git-runner.ts";
import { cohortFixture, gitTestEnv, type TempDirs } from "./store-fixtures.ts";

export const GIT = findGitExecutable()!;

/** A new store repository under a temp home, opened with a process counter. */
export async function gitBackendRepo(temps: TempDirs, options: { identity?: boolean } = {}) {
  const home = temps.make("sf-git-");
  const cfg = join(home, "gitconfig");
  writeFileSync(cfg, "");
  const env: NodeJS.ProcessEnv = { ...gitTestEnv(cfg, options.identity ?? true), HOME: home };
  const root = join(home, "state-flow");
  const counter = { count: 0 };
  const backend = (await openGitBackend({ root, binary: GIT, env, counter, generation: "test", init: true }))!;
  return { root, env, counter, backend, home };
}

/** Cohort `n`: the fixture's scope files (all but the cwd scope's meta), each padded with `size` bytes. */
export function cohort(n: number, size = 64): Map<string, Buffer> {
  const { g, c, s } = cohortFixture();
  const pad = (tag: string) => Buffer.from(`{"n":${n},"tag":"${tag}","pad":"${"x".repeat(size)}"}\n`);
  return new Map([
    [g.checkpoint, pad("gc")],
    [g.patches, pad("gp")],
    [g.meta, pad("gm")],
    [c.checkpoint, pad("cc")],
    [c.patches, pad("cp")],
    [s.checkpoint, pad("sc")],
    [s.patches, pad("sp")],
    [s.meta, pad("sm")],
  ]);
}
