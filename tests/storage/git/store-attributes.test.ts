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
    expect(STORE_ATTRIBUTES).toContain("checkpoint.json -text -eol -filter -ident -working-tree-encoding\n");
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
