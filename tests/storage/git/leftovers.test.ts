import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { removeLeftovers } from "../../../storage/git/leftovers.ts";
import { TempDirs } from "../../support/store-fixtures.ts";

const temps = new TempDirs();
afterEach(() => temps.cleanup());

describe("removeLeftovers", () => {
  it("removes what a dead owner left, keeps a running owner's files and anything not State Flow's", () => {
    const root = temps.make("sf-left-");
    const gitDir = join(root, ".git");
    mkdirSync(join(root, "--p--"), { recursive: true });
    mkdirSync(gitDir);
    const dead = spawnSync(process.execPath, ["-e", ""]).pid;
    const alive = process.ppid;
    const files = {
      deadIndex: join(gitDir, `state-flow-index.${dead}.ab12`),
      deadIndexLock: join(gitDir, `state-flow-index.${dead}.ab12.lock`),
      deadJournalTemp: join(gitDir, `.state-flow-publication.journal.${dead}.tmp`),
      deadTemp: join(root, "--p--", `.checkpoint.json.sf-${dead}-00ff.tmp`),
      aliveIndex: join(gitDir, `state-flow-index.${alive}.cd34`),
      aliveTemp: join(root, `.meta.json.sf-${alive}-00ff.tmp`),
      user: join(root, "--p--", "notes.tmp"),
      indexLock: join(gitDir, "index.lock"),
    };
    for (const path of Object.values(files)) writeFileSync(path, "");
    writeFileSync(files.indexLock, `state-flow index.lock pid=${dead} host=${hostname()} token=00ff\n`);
    removeLeftovers({ root, gitDir, commonDir: gitDir }, ["--p--"]);
    const left = Object.fromEntries(Object.entries(files).map(([name, path]) => [name, existsSync(path)]));
    expect(left).toEqual({
      deadIndex: false,
      deadIndexLock: false,
      deadJournalTemp: false,
      deadTemp: false,
      aliveIndex: true,
      aliveTemp: true,
      user: true,
      indexLock: false,
    });
  });

  it("a linked worktree: isolated indexes in its git dir, journal temps in the common dir; others' locks stay", () => {
    const root = temps.make("sf-left-");
    const [gitDir, commonDir] = [join(root, "wt-git"), join(root, "common")];
    mkdirSync(gitDir);
    mkdirSync(commonDir);
    const dead = spawnSync(process.execPath, ["-e", ""]).pid;
    const files = {
      index: join(gitDir, `state-flow-index.${dead}.ab12`),
      journalTemp: join(commonDir, `.state-flow-publication.journal.${dead}.tmp`),
      indexInCommon: join(commonDir, `state-flow-index.${dead}.ab12`),
      journalTempInGitDir: join(gitDir, `.state-flow-publication.journal.${dead}.tmp`),
      foreignLock: join(gitDir, "index.lock"),
    };
    for (const path of Object.values(files)) writeFileSync(path, "");
    removeLeftovers({ root, gitDir, commonDir }, []);
    const left = Object.fromEntries(Object.entries(files).map(([name, path]) => [name, existsSync(path)]));
    expect(left).toEqual({
      index: false,
      journalTemp: false,
      indexInCommon: true,
      journalTempInGitDir: true,
      foreignLock: true, // not stamped by State Flow: a git command's, never removed
    });
  });
});
