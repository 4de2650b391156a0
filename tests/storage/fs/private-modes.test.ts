// A store cloned from the remote before its first start (the README's second machine) arrives with
// the umask's modes; its first open makes it private, as every store State Flow writes is: the root
// 0700, folders 0700 and files 0600 outside .git, symlinks left alone, `git status` unchanged. A
// store already private is not walked again.
import { chmodSync, mkdirSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { keepPrivate } from "../../../storage/fs/private-modes.ts";
import { openStore } from "../../../storage/open-store.ts";
import { TempDirs, git, gitTestEnv } from "../../support/store-fixtures.ts";

const temps = new TempDirs();
afterEach(() => temps.cleanup());
const mode = (path: string) => statSync(path).mode & 0o777;

describe("a store made private at its first open", () => {
  it("a clone of the remote: root, folders and files tightened, .git and symlinks left, git sees nothing", async () => {
    const home = temps.make("sf-private-");
    writeFileSync(join(home, "gitconfig"), "[user]\n\tname = t\n\temail = t@private.invalid\n");
    const env = gitTestEnv(join(home, "gitconfig"));
    const source = join(home, "source");
    mkdirSync(join(source, "--p--", "s1"), { recursive: true });
    writeFileSync(join(source, "checkpoint.json"), "{}");
    writeFileSync(join(source, "--p--", "s1", "meta.json"), "{}");
    git(home, env, "init", "-q", source);
    git(source, env, "add", "-A");
    git(source, env, "commit", "-qm", "start");
    const root = join(home, "state-flow");
    git(home, env, "clone", "-q", source, root);
    chmodSync(root, 0o755);
    chmodSync(join(root, "--p--"), 0o755);
    chmodSync(join(root, "checkpoint.json"), 0o644);
    chmodSync(join(root, "--p--", "s1", "meta.json"), 0o644);
    const outside = join(home, "outside.txt");
    writeFileSync(outside, "not the store's");
    chmodSync(outside, 0o644);
    symlinkSync(outside, join(root, "link"));
    const gitConfigMode = mode(join(root, ".git", "config"));

    await openStore({ root, env });
    expect(mode(root)).toBe(0o700);
    expect(mode(join(root, "--p--"))).toBe(0o700);
    expect(mode(join(root, "--p--", "s1"))).toBe(0o700);
    expect(mode(join(root, "checkpoint.json"))).toBe(0o600);
    expect(mode(join(root, "--p--", "s1", "meta.json"))).toBe(0o600);
    expect(mode(outside)).toBe(0o644);
    expect(mode(join(root, ".git", "config"))).toBe(gitConfigMode);
    expect(git(root, env, "status", "--porcelain")).toBe("?? link\n");
  });

  it("a root already private is not walked: one lstat, nothing changed", async () => {
    const root = temps.make("sf-private-done-");
    chmodSync(root, 0o700);
    writeFileSync(join(root, "mine.txt"), "the user's");
    chmodSync(join(root, "mine.txt"), 0o644);
    expect(await keepPrivate(root)).toBe(false);
    expect(mode(join(root, "mine.txt"))).toBe(0o644);
    chmodSync(root, 0o750);
    expect(await keepPrivate(root)).toBe(true);
    expect(mode(root)).toBe(0o700);
    expect(mode(join(root, "mine.txt"))).toBe(0o600);
  });
});
