import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { GitRunner, findGitExecutable } from "../../../storage/git/git-runner.ts";
import { gitBool, parseConfigList, readCommitSettings } from "../../../storage/git/git-settings.ts";
import { TempDirs, git, gitTestEnv } from "../../support/store-fixtures.ts";

const temps = new TempDirs();
afterEach(() => temps.cleanup());
const GIT = findGitExecutable()!;

/** A fresh repository and the settings State Flow reads from it, after `config` lines are set. */
async function settingsOf(
  config: string[][] = [],
  identity = true,
  extraEnv: NodeJS.ProcessEnv = {},
  objectFormat: "sha1" | "sha256" = "sha1",
) {
  const root = temps.make("sf-settings-");
  const globalConfig = join(temps.make("sf-settings-cfg-"), "gitconfig");
  writeFileSync(globalConfig, "");
  const env = { ...gitTestEnv(globalConfig, identity), ...extraEnv };
  git(root, env, "init", "-q");
  for (const [key, value] of config) git(root, env, "config", key!, value!);
  const runner = new GitRunner({ cwd: root, env, binary: GIT });
  return { root, settings: await readCommitSettings(runner, { root, commonDir: join(root, ".git"), objectFormat }) };
}

describe("git settings", () => {
  it("reads git's booleans as git does (a key without a value is true)", () => {
    expect([null, "true", "YES", "on", "1", "-2"].map(gitBool)).toEqual([true, true, true, true, true, true]);
    expect([undefined, "false", "no", "Off", "", "0", "maybe"].map(gitBool)).toEqual([
      false,
      false,
      false,
      false,
      false,
      false,
      false,
    ]);
  });

  it("parses `git config -z -l`, later values winning and valueless keys kept as null", () => {
    const config = parseConfigList("core.bare\nfalse\0commit.gpgsign\0core.bare\ntrue\0user.name\nA\nB\0");
    expect([...config]).toEqual([
      ["core.bare", "true"],
      ["commit.gpgsign", null],
      ["user.name", "A\nB"],
    ]);
  });

  it("takes the identity from git var and allows the in-process commit on a plain repository", async () => {
    const { root, settings } = await settingsOf();
    expect(settings).toMatchObject({
      processPathReason: null,
      author: "State Flow Test <test@state-flow.invalid>",
      committer: "State Flow Test <test@state-flow.invalid>",
      authorDate: null,
      committerDate: null,
      sharedRepository: false,
      logAllRefUpdates: "normal",
      lockTimeoutMs: 100,
      referenceTransactionHook: join(root, ".git", "hooks", "reference-transaction"),
    });
  });

  it("keeps a date GIT_*_DATE fixes, as git parsed it", async () => {
    const { settings } = await settingsOf([], true, {
      GIT_AUTHOR_DATE: "1700000000 +0200",
      GIT_COMMITTER_DATE: "1700000001 -0130",
    });
    expect([settings.authorDate, settings.committerDate, settings.processPathReason]).toEqual([
      "1700000000 +0200",
      "1700000001 -0130",
      null,
    ]);
  });

  it.each([
    ["commit.gpgSign", "true", "commit.gpgSign"],
    ["i18n.commitEncoding", "ISO-8859-1", "i18n.commitEncoding"],
    ["core.sharedRepository", "group", "core.sharedRepository"],
  ])("leaves the commit to git when %s = %s", async (key, value, reason) => {
    const { settings } = await settingsOf([[key, value]]);
    expect(settings.processPathReason).toBe(reason);
  });

  it("leaves the commit to git for sha256 objects", async () => {
    expect((await settingsOf([], true, {}, "sha256")).settings.processPathReason).toBe("sha256 object format");
  });

  it("follows the reflog, lock-timeout, fsync and hooks-path settings", async () => {
    const { root, settings } = await settingsOf([
      ["core.logAllRefUpdates", "always"],
      ["core.filesRefLockTimeout", "250"],
      ["core.fsync", "loose-object"],
      ["core.hooksPath", "my-hooks"],
    ]);
    expect(settings).toMatchObject({
      logAllRefUpdates: "always",
      lockTimeoutMs: 250,
      fsyncObjects: true,
      referenceTransactionHook: join(root, "my-hooks", "reference-transaction"),
    });
    const off = await settingsOf([["core.logAllRefUpdates", "false"]]);
    expect([off.settings.logAllRefUpdates, off.settings.fsyncObjects]).toEqual(["none", false]);
  });

  it("refuses an identity git would only guess, naming the command that sets one", async () => {
    await expect(settingsOf([], false, { EMAIL: "", HOME: temps.make("sf-settings-home-") })).rejects.toMatchObject({
      code: "git-identity-missing",
      message: expect.stringContaining('git config --global user.email "you@example.com"'),
    });
  });

  it("the store-only advice is one shell command that works for a store path with spaces and quotes", async () => {
    const root = join(temps.make("sf-settings-"), "Pi's agent", "state flow");
    mkdirSync(root, { recursive: true });
    const globalConfig = join(temps.make("sf-settings-cfg-"), "gitconfig");
    writeFileSync(globalConfig, "");
    const env = { ...gitTestEnv(globalConfig, false), EMAIL: "", HOME: temps.make("sf-settings-home-") };
    git(root, env, "init", "-q");
    const repo = { root, commonDir: join(root, ".git"), objectFormat: "sha1" as const };
    const read = () => readCommitSettings(new GitRunner({ cwd: root, env, binary: GIT }), repo);
    const error = (await read().catch((e: unknown) => e)) as Error;
    expect(error).toMatchObject({ code: "git-identity-missing" });
    expect(error.message).not.toMatch(/\n|Please tell me who you are|Omit --global/);
    const storeOnly = /or for this store only: (.+)\.$/.exec(error.message)![1]!;
    expect(spawnSync("sh", ["-c", storeOnly], { cwd: tmpdir(), env, encoding: "utf8" }).status).toBe(0);
    expect((await read()).author).toBe("Your Name <you@example.com>");
  });
});
