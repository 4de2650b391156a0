import { existsSync, mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  STORE_TEMP_GLOB,
  assertStorePath,
  prepareOwnedFilesAtomic,
  readOwnedFile,
  readOwnedFilesSync,
  removeOwnedFile,
  sha256Hex,
  writeOwnedFileAtomic,
  writeOwnedFilesAtomic,
  unlinkQuietlySync,
} from "../../../storage/fs/fs-safe.ts";
import { TempDirs } from "../../support/store-fixtures.ts";

const temps = new TempDirs();
afterEach(() => temps.cleanup());

describe("fs-safe", () => {
  it("unlinkQuietlySync removes a file that is there and leaves a missing one (or a directory) alone", () => {
    const dir = temps.make("sf-fs-");
    writeFileSync(join(dir, "f"), "x");
    mkdirSync(join(dir, "d"));
    unlinkQuietlySync(join(dir, "f"));
    expect(() => unlinkQuietlySync(join(dir, "f"))).not.toThrow();
    expect(() => unlinkQuietlySync(join(dir, "d"))).not.toThrow();
    expect([existsSync(join(dir, "f")), existsSync(join(dir, "d"))]).toEqual([false, true]);
  });

  it("hashes bytes with sha256", () => {
    expect(sha256Hex("")).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  });

  it("validates store-relative paths", () => {
    expect(assertStorePath("a/b.json")).toEqual(["a", "b.json"]);
    for (const bad of ["", "/abs", "a//b", "a/../b", "./a", ".git/config", "a\\b", "a\0b", "a/"]) {
      expect(() => assertStorePath(bad), bad).toThrow(expect.objectContaining({ code: "invalid-key" }));
    }
  });

  it("distinguishes absent from present and returns raw bytes", async () => {
    const root = temps.make();
    expect(await readOwnedFile(root, "x/y/meta.json")).toBeNull();
    expect(await readOwnedFile(join(root, "missing-root"), "meta.json")).toBeNull();
    const bytes = Buffer.from([0xff, 0xfe, 0x00, 0x41, 0x0a]); // not UTF-8: bytes must survive exactly
    await writeOwnedFileAtomic(root, "x/y/meta.json", bytes);
    const back = await readOwnedFile(root, "x/y/meta.json");
    expect(back).toEqual(bytes);
    expect(readFileSync(join(root, "x", "y", "meta.json"))).toEqual(bytes); // a store path maps below the root
    await writeOwnedFileAtomic(root, "x/y/meta.json", Buffer.alloc(0));
    expect(await readOwnedFile(root, "x/y/meta.json")).toEqual(Buffer.alloc(0)); // empty but present
  });

  it("writes atomically without leaving temp files and creates a missing root", async () => {
    const root = join(temps.make(), "store");
    await writeOwnedFileAtomic(root, "a.json", Buffer.from("1"));
    await writeOwnedFileAtomic(root, "a.json", Buffer.from("22"));
    expect(readFileSync(join(root, "a.json"), "utf8")).toBe("22");
    expect(readdirSync(root)).toEqual(["a.json"]);
  });

  it(
    "prepares several files invisibly (temp + fsync), then " +
      "renames them in order on commit, or removes them on abort",
    async () => {
      const root = temps.make();
      await writeOwnedFilesAtomic(root, [
        ["d/a.json", Buffer.from("old a")],
        ["b.json", Buffer.from("old b")],
      ]);
      const prepared = await prepareOwnedFilesAtomic(root, [
        ["d/a.json", Buffer.from("new a")],
        ["b.json", Buffer.from("new b")],
        ["e/c.json", Buffer.from("c")],
      ]);
      // nothing visible yet: targets keep their bytes, temps sit next to them
      expect(readFileSync(join(root, "d/a.json"), "utf8")).toBe("old a");
      expect(readdirSync(join(root, "d")).filter((n) => n.endsWith(".tmp"))).toHaveLength(1);
      // named as STORE_TEMP_GLOB (**/.*.sf-*.tmp) says, so the Git backend's `git add -A` skips them
      expect(STORE_TEMP_GLOB).toBe("**/.*.sf-*.tmp");
      for (const name of readdirSync(join(root, "d")).filter((n) => n.endsWith(".tmp")))
        expect(name).toMatch(/^\.a\.json\.sf-\d+-[0-9a-f]{12}\.tmp$/);
      await prepared.commit();
      expect(readFileSync(join(root, "d/a.json"), "utf8")).toBe("new a");
      expect(readFileSync(join(root, "b.json"), "utf8")).toBe("new b");
      expect(readFileSync(join(root, "e/c.json"), "utf8")).toBe("c");
      expect(
        [...readdirSync(root), ...readdirSync(join(root, "d")), ...readdirSync(join(root, "e"))].filter((n) =>
          n.endsWith(".tmp"),
        ),
      ).toEqual([]);

      const aborted = await prepareOwnedFilesAtomic(root, [
        ["d/a.json", Buffer.from("never")],
        ["b.json", Buffer.from("never")],
      ]);
      await aborted.abort();
      expect(readFileSync(join(root, "d/a.json"), "utf8")).toBe("new a");
      expect(readFileSync(join(root, "b.json"), "utf8")).toBe("new b");
      expect([...readdirSync(root), ...readdirSync(join(root, "d"))].filter((n) => n.endsWith(".tmp"))).toEqual([]);

      // one refused entry fails the whole preparation and leaves no temp file of the others behind
      const outside = temps.make();
      symlinkSync(join(outside, "t.json"), join(root, "link.json"));
      await expect(
        prepareOwnedFilesAtomic(root, [
          ["d/a.json", Buffer.from("x")],
          ["link.json", Buffer.from("x")],
        ]),
      ).rejects.toMatchObject({ code: "symlink-refused" });
      expect(readdirSync(join(root, "d")).filter((n) => n.endsWith(".tmp"))).toEqual([]);
      expect(readFileSync(join(root, "d/a.json"), "utf8")).toBe("new a");
      expect(readdirSync(outside)).toEqual([]);
    },
  );

  it("refuses symlinked files and directories for reads, writes and removal", async () => {
    const root = temps.make();
    const outside = temps.make();
    writeFileSync(join(outside, "target.json"), "secret");
    symlinkSync(join(outside, "target.json"), join(root, "meta.json"));
    await expect(readOwnedFile(root, "meta.json")).rejects.toMatchObject({
      code: "symlink-refused",
      message: expect.stringContaining("meta.json"),
    });
    await expect(writeOwnedFileAtomic(root, "meta.json", Buffer.from("x"))).rejects.toMatchObject({
      code: "symlink-refused",
    });
    await expect(removeOwnedFile(root, "meta.json")).rejects.toMatchObject({ code: "symlink-refused" });
    expect(readFileSync(join(outside, "target.json"), "utf8")).toBe("secret");

    symlinkSync(outside, join(root, "--cwd--"));
    await expect(readOwnedFile(root, "--cwd--/target.json")).rejects.toMatchObject({ code: "symlink-refused" });
    await expect(writeOwnedFileAtomic(root, "--cwd--/new.json", Buffer.from("x"))).rejects.toMatchObject({
      code: "symlink-refused",
    });
    expect(readdirSync(outside)).toEqual(["target.json"]);
  });

  it("refuses non-regular files", async () => {
    const root = temps.make();
    mkdirSync(join(root, "meta.json"));
    await expect(readOwnedFile(root, "meta.json")).rejects.toMatchObject({ code: "not-regular-file" });
    await expect(writeOwnedFileAtomic(root, "meta.json", Buffer.from("x"))).rejects.toMatchObject({
      code: "not-regular-file",
    });
  });

  it("removes files and reports absence", async () => {
    const root = temps.make();
    await writeOwnedFileAtomic(root, "d/a.json", Buffer.from("1"));
    expect(await removeOwnedFile(root, "d/a.json")).toBe(true);
    expect(await removeOwnedFile(root, "d/a.json")).toBe(false);
    expect(await removeOwnedFile(root, "zz/a.json")).toBe(false);
  });

  it("reads several files synchronously with readOwnedFile's results and refusals", async () => {
    const root = temps.make();
    mkdirSync(join(root, "a", "b"), { recursive: true });
    writeFileSync(join(root, "a", "b", "x.json"), Buffer.from([0xff, 0x00, 0x0a]));
    writeFileSync(join(root, "top.json"), "");
    writeFileSync(join(root, "a", "file"), "not a directory");
    const rels = ["a/b/x.json", "top.json", "a/b/absent.json", "gone/dir/y.json"];
    const read = readOwnedFilesSync(root, rels);
    expect([...read.keys()]).toEqual(rels);
    for (const rel of rels) expect(read.get(rel), rel).toEqual(await readOwnedFile(root, rel));
    expect(read.get("a/b/x.json")).toEqual(Buffer.from([0xff, 0x00, 0x0a]));
    expect(read.get("a/b/absent.json")).toBeNull();
    expect(readOwnedFilesSync(join(root, "missing-root"), ["a.json"]).get("a.json")).toBeNull();
    // A root spelled with a trailing slash is the same root.
    expect(readOwnedFilesSync(`${root}/`, ["top.json", "a/b/x.json"])).toEqual(
      readOwnedFilesSync(root, ["top.json", "a/b/x.json"]),
    );
    // The same refusals, named the same way.
    for (const [rel, code] of [
      ["a/file/z.json", "not-regular-file"],
      ["a/b", "not-regular-file"],
    ] as const) {
      await expect(readOwnedFile(root, rel)).rejects.toMatchObject({ code });
      expect(() => readOwnedFilesSync(root, [rel]), rel).toThrow(expect.objectContaining({ code }));
    }
    symlinkSync(join(root, "a", "b"), join(root, "linked"));
    symlinkSync(join(root, "top.json"), join(root, "link.json"));
    for (const rel of ["linked/x.json", "link.json"]) {
      await expect(readOwnedFile(root, rel)).rejects.toMatchObject({ code: "symlink-refused" });
      expect(() => readOwnedFilesSync(root, [rel]), rel).toThrow(expect.objectContaining({ code: "symlink-refused" }));
    }
    expect(() => readOwnedFilesSync(root, ["../escape"])).toThrow(expect.objectContaining({ code: "invalid-key" }));
  });
});
