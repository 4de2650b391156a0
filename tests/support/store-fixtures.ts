// Shared helpers for storage tests: temp directories that are always removed, and real git repos.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cohortPaths, scopeFiles } from "../../storage/layout.ts";

export class TempDirs {
  private readonly dirs: string[] = [];
  make(prefix = "sf-store-"): string {
    const dir = mkdtempSync(join(tmpdir(), prefix));
    this.dirs.push(dir);
    return dir;
  }
  cleanup(): void {
    for (const dir of this.dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  }
}

/** Environment for git child processes in tests: no system config, an empty global config, a fixed identity. */
export function gitTestEnv(globalConfigFile: string, identity = true): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: globalConfigFile };
  for (const key of Object.keys(env)) {
    if (
      /^GIT_(AUTHOR|COMMITTER)_/.test(key) ||
      key === "GIT_DIR" ||
      key === "GIT_INDEX_FILE" ||
      key === "GIT_WORK_TREE"
    )
      delete env[key];
  }
  if (identity) {
    env.GIT_AUTHOR_NAME = "State Flow Test";
    env.GIT_AUTHOR_EMAIL = "test@state-flow.invalid";
    env.GIT_COMMITTER_NAME = "State Flow Test";
    env.GIT_COMMITTER_EMAIL = "test@state-flow.invalid";
  }
  return env;
}

export function git(cwd: string, env: NodeJS.ProcessEnv, ...args: string[]): string {
  return execFileSync("git", args, { cwd, env, encoding: "utf8", maxBuffer: 1 << 30 });
}

/** The cohort the backend tests publish: fixed scope keys, every member path and each scope's files. */
export function cohortFixture() {
  const keys = {
    cwdKey: "--tmp-project--",
    sessionKey: "2026-01-01T00-00-00-000Z_11111111-2222-7333-8444-555555555555",
  };
  return {
    keys,
    paths: cohortPaths(keys),
    g: scopeFiles("global", keys),
    c: scopeFiles("cwd", keys),
    s: scopeFiles("session", keys),
  };
}

/** A fresh repository (`git init`) in a temp dir, with an isolated empty global config and a test identity. */
export function initRepo(temps: TempDirs, prefix: string): { dir: string; env: NodeJS.ProcessEnv; index: string } {
  const dir = temps.make(prefix);
  const cfg = join(temps.make(`${prefix}cfg-`), "gitconfig");
  writeFileSync(cfg, "");
  const env = gitTestEnv(cfg);
  git(dir, env, "init", "-q");
  return { dir, env, index: join(dir, ".git", "index") };
}
