// The store attributes State Flow keeps in info/attributes, and what they do for a user's own git.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openGitBackend } from "../../../storage/git/git-backend.ts";
import { findGitExecutable } from "../../../storage/git/git-runner.ts";
import { STORE_ATTRIBUTES, ensureStoreAttributes, withStoreAttributes } from "../../../storage/git/store-attributes.ts";
import { TempDirs, cohortFixture, git, gitTestEnv } from "../../support/store-fixtures.ts";

const temps = new TempDirs();
afterEach(() => temps.cleanup());

describe("withStoreAttributes", () => {
  it("appends the block once and keeps a user's own lines", () => {
    expect(withStoreAttributes(null)).toBe(STORE_ATTRIBUTES);
    const user = "*.png binary";
    const once = withStoreAttributes(user)!;
    expect(once).toBe(`${user}\n${STORE_ATTRIBUTES}`);
    expect(withStoreAttributes(once)).toBeNull();
    expect(STORE_ATTRIBUTES).toContain("checkpoint.json -text -eol -filter -ident -working-tree-encoding -merge\n");
  });

  it("replaces the block an earlier version wrote (without -merge), keeping the user's lines", () => {
    const earlier =
      "*.png binary\n# state-flow: its store files are committed byte-exact (no eol conversion, filter or encoding)\n" +
      ["checkpoint.json", "patches.jsonl", "meta.json", "config.json"]
        .map((f) => `${f} -text -eol -filter -ident -working-tree-encoding\n`)
        .join("");
    expect(withStoreAttributes(earlier)).toBe(`*.png binary\n${STORE_ATTRIBUTES}`);
  });

  it("ensureStoreAttributes writes info/attributes only when the block is missing", async () => {
    const common = temps.make("sf-attrs-");
    mkdirSync(join(common, "info"));
    writeFileSync(join(common, "info", "attributes"), "notes.md diff=markdown\n");
    expect(await ensureStoreAttributes(common)).toBe(true);
    expect(await ensureStoreAttributes(common)).toBe(false);
    expect(readFileSync(join(common, "info", "attributes"), "utf8")).toBe(
      `notes.md diff=markdown\n${STORE_ATTRIBUTES}`,
    );
  });
});

describe("a user's git beside the store, with attributes that would rewrite the store files", () => {
  it("the user's own git commit -a commits State Flow's exact bytes; their own files keep their filters", async () => {
    const home = temps.make("sf-attrs-home-");
    const cfg = join(home, "gitconfig");
    writeFileSync(cfg, '[filter "upper"]\n\tclean = tr a-z A-Z\n\tsmudge = cat\n');
    const env = { ...gitTestEnv(cfg), HOME: home };
    const root = join(home, "state-flow");
    const backend = (await openGitBackend({ root, binary: findGitExecutable()!, env, generation: "t", init: true }))!;
    writeFileSync(join(root, ".gitattributes"), "*.json text eol=crlf\n*.jsonl filter=upper\n*.md filter=upper\n");
    const { paths, g } = cohortFixture();
    const bytes = (n: number) =>
      new Map(paths.map((p) => [p, Buffer.from(`{"a":"crlf\\r\\n and lower ${n}"}\r\nlf\n`)] as const));
    await backend.publish({ basis: await backend.loadCurrent(paths), writes: bytes(1) });
    // The user edits a store file by hand (as a test of "their commit keeps it exact") and a file of theirs.
    writeFileSync(join(root, g.patches), "lower case\r\n");
    writeFileSync(join(root, "notes.md"), "lower\n");
    git(root, env, "add", "notes.md");
    git(root, env, "commit", "-q", "-a", "-m", "user");
    expect(git(root, env, "cat-file", "blob", `HEAD:${g.patches}`)).toBe("lower case\r\n");
    expect(git(root, env, "cat-file", "blob", `HEAD:${g.checkpoint}`)).toBe(bytes(1).get(g.checkpoint)!.toString());
    expect(git(root, env, "cat-file", "blob", "HEAD:notes.md")).toBe("LOWER\n");
    // State Flow reads the user's commit as current (no divergence) and publishes over it.
    const live = await backend.loadCurrent(paths);
    await backend.publish({ basis: live, writes: bytes(2) });
    for (const [path, b] of bytes(2))
      expect(git(root, env, "cat-file", "blob", `HEAD:${path}`), path).toBe(b.toString());
    expect(git(root, env, "status", "--porcelain")).toBe("");
  });
});

describe("a user's own git merge of two machines' stores", () => {
  // Two machines changed different lines of one store file: git alone would merge them silently into a
  // file neither machine wrote (a meta.json describing neither side's pair).
  const base = '{\n  "a": 1,\n  "b": 2,\n  "c": 3,\n  "d": 4\n}\n';
  const ours = base.replace('"a": 1', '"a": 10');
  const theirs = base.replace('"d": 4', '"d": 40');

  function diverge(root: string, env: NodeJS.ProcessEnv, path: string, commit: (text: string) => Promise<void>) {
    return async () => {
      await commit(base);
      const start = git(root, env, "rev-parse", "HEAD").trim();
      await commit(ours);
      git(root, env, "worktree", "add", "-q", "-b", "other", `${root}-other`, start);
      writeFileSync(join(`${root}-other`, path), theirs);
      git(`${root}-other`, env, "commit", "-q", "-am", "other machine");
      try {
        git(root, env, "merge", "-q", "--no-edit", "other");
        return "merged";
      } catch {
        return "conflict";
      }
    };
  }

  it("stops with a conflict on a store file both changed instead of merging its lines", async () => {
    const home = temps.make("sf-attrs-merge-");
    const cfg = join(home, "gitconfig");
    writeFileSync(cfg, "");
    const env = { ...gitTestEnv(cfg), HOME: home };
    const root = join(home, "state-flow");
    const backend = (await openGitBackend({ root, binary: findGitExecutable()!, env, generation: "t", init: true }))!;
    const { g } = cohortFixture();
    const publish = async (text: string) => {
      await backend.publish({
        basis: await backend.loadCurrent([g.meta]),
        writes: new Map([[g.meta, Buffer.from(text)]]),
      });
    };
    expect(await diverge(root, env, g.meta, publish)()).toBe("conflict");
    expect(git(root, env, "ls-files", "-u")).toContain(g.meta);
    git(root, env, "merge", "--abort");
    expect(readFileSync(join(root, g.meta), "utf8")).toBe(ours);
  });

  it("control: the same merge in a repository without State Flow's attributes joins the lines", async () => {
    const home = temps.make("sf-attrs-plain-");
    const cfg = join(home, "gitconfig");
    writeFileSync(cfg, "");
    const env = { ...gitTestEnv(cfg), HOME: home };
    const root = join(home, "plain");
    mkdirSync(root);
    git(root, env, "init", "-q");
    const commit = async (text: string) => {
      writeFileSync(join(root, "meta.json"), text);
      git(root, env, "add", "meta.json");
      git(root, env, "commit", "-q", "-m", "c");
    };
    expect(await diverge(root, env, "meta.json", commit)()).toBe("merged");
    expect(readFileSync(join(root, "meta.json"), "utf8")).toBe(
      base.replace('"a": 1', '"a": 10').replace('"d": 4', '"d": 40'),
    );
  });
});
