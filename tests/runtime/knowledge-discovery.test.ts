// Knowledge discovery over real directories: nested Markdown alike, symlinks skipped (files and
// directories, including one that points outside the root), uppercase .MD and other files ignored.
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { discoverKnowledge } from "../../runtime/knowledge-discovery.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
const temp = () => {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "sf-knowledge-")));
  dirs.push(dir);
  return dir;
};
const sha = (text: string) => `sha256:${createHash("sha256").update(text).digest("hex")}`;

describe("discoverKnowledge", () => {
  it("finds regular lowercase .md at every depth, hashes and counts bytes, and skips everything else", async () => {
    const home = temp();
    const root = join(home, "knowledge");
    const outside = join(home, "outside");
    mkdirSync(join(root, "a/b"), { recursive: true });
    mkdirSync(outside);
    writeFileSync(join(root, "top.md"), "# top\n");
    writeFileSync(join(root, "a/b/deep.md"), "deep");
    writeFileSync(join(root, "UPPER.MD"), "ignored");
    writeFileSync(join(root, "notes.txt"), "ignored");
    writeFileSync(join(outside, "secret.md"), "never read");
    symlinkSync(join(outside, "secret.md"), join(root, "link.md"));
    symlinkSync(outside, join(root, "linked-dir"));
    const found = await discoverKnowledge(root);
    expect(found.exists).toBe(true);
    expect(found.sources).toEqual([
      { path: join(root, "a/b/deep.md"), hash: sha("deep"), bytes: 4 },
      { path: join(root, "top.md"), hash: sha("# top\n"), bytes: 6 },
    ]);
    expect(found.skipped).toEqual([
      { path: join(root, "link.md"), reason: "symlink" },
      { path: join(root, "linked-dir"), reason: "symlink" },
    ]);
    expect(JSON.stringify(found), "bodies are never kept").not.toContain("never read");
  });

  it("a missing root means no candidates; a symlinked root is read at its canonical path", async () => {
    const home = temp();
    expect(await discoverKnowledge(join(home, "missing"))).toEqual({
      root: join(home, "missing"),
      exists: false,
      sources: [],
      skipped: [],
    });
    mkdirSync(join(home, "real"));
    writeFileSync(join(home, "real", "x.md"), "x");
    symlinkSync(join(home, "real"), join(home, "alias"));
    const found = await discoverKnowledge(join(home, "alias"));
    expect(found.root).toBe(join(home, "real"));
    expect(found.sources.map((s) => s.path)).toEqual([join(home, "real", "x.md")]);
  });

  it("a directory it cannot list is reported as skipped, never as an empty clean result", async () => {
    const home = temp();
    writeFileSync(join(home, "knowledge"), "a file where the root should be");
    expect(await discoverKnowledge(join(home, "knowledge"))).toEqual({
      root: join(home, "knowledge"),
      exists: true,
      sources: [],
      skipped: [{ path: join(home, "knowledge"), reason: "unreadable directory (ENOTDIR)" }],
    });
  });
});
