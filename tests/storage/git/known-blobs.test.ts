import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { KnownBlobCache, readKnownBlobs, writeKnownBlobs } from "../../../storage/git/known-blobs.ts";
import { gitObjectId } from "../../../storage/git/plumbing/git-objects.ts";
import { TempDirs } from "../../support/store-fixtures.ts";

const temps = new TempDirs();
afterEach(() => temps.cleanup());
const A = "a".repeat(40);

describe("the known-blobs cache", () => {
  it("reads back what was written; none is null", async () => {
    const dir = temps.make("sf-known-");
    expect(await readKnownBlobs(dir)).toBeNull();
    writeKnownBlobs(dir, {
      revision: A,
      blobs: new Map([
        ["checkpoint.json", "b".repeat(40)],
        ["x", null],
      ]),
    });
    expect(await readKnownBlobs(dir)).toEqual({
      revision: A,
      blobs: new Map([
        ["checkpoint.json", "b".repeat(40)],
        ["x", null],
      ]),
    });
  });

  it("anything but the exact shape is ignored, and a write that cannot happen is not an error", async () => {
    const dir = temps.make("sf-known-");
    mkdirSync(join(dir, "state-flow"));
    const file = join(dir, "state-flow", "known-blobs.json");
    for (const text of ["{", '{"version":2}', `{"version":1,"revision":"${A}","blobs":{"p":"xyz"}}`]) {
      writeFileSync(file, text);
      expect(await readKnownBlobs(dir), text).toBeNull();
    }
    writeFileSync(join(dir, "blocked"), "");
    expect(() => writeKnownBlobs(join(dir, "blocked"), { revision: A, blobs: new Map() })).not.toThrow();
  });

  describe("KnownBlobCache", () => {
    const blob = (text: string) => gitObjectId("blob", Buffer.from(text));
    const live = (entries: Record<string, string | null>) =>
      new Map(Object.entries(entries).map(([p, t]) => [p, t === null ? null : Buffer.from(t)] as const));

    it("answers HEAD's listing only for the revision and members it knows", async () => {
      const cache = new KnownBlobCache(temps.make("sf-known-"), "sha1");
      expect(await cache.listingAt(A, ["m"])).toBeNull();
      cache.remember(
        A,
        new Map([
          ["m", blob("bytes")],
          ["gone", null],
        ]),
      );
      expect(await cache.listingAt(A, ["m", "gone"])).toBe(`${A} commit\n${blob("bytes")} blob\nHEAD:gone missing\n`);
      expect(await cache.listingAt(A, ["m", "other"])).toBeNull(); // a member it does not know
      expect(await cache.listingAt("b".repeat(40), ["m"])).toBeNull(); // HEAD moved
      expect(await cache.listingAt(null, ["m"])).toBeNull(); // unborn or unreadable HEAD
      cache.forget();
      expect(await cache.listingAt(A, ["m"])).toBeNull();
    });

    it("keeps a committed cohort for the next process, which loads it on first use", async () => {
      const dir = temps.make("sf-known-");
      new KnownBlobCache(dir, "sha1").committed(A, new Map([["m", blob("x")]]));
      const next = new KnownBlobCache(dir, "sha1");
      expect(await next.listingAt(A, ["m"])).toBe(`${A} commit\n${blob("x")} blob\n`);
    });

    it("gives the live files for the known revision only while they still have its blobs", async () => {
      const cache = new KnownBlobCache(temps.make("sf-known-"), "sha1");
      cache.remember(A, new Map([["m", blob("v1")]]));
      const same = await cache.liveFilesAt(A, ["m"], async () => live({ m: "v1" }));
      expect(same?.get("m")?.toString()).toBe("v1");
      expect(await cache.liveFilesAt(A, ["m"], async () => live({ m: "v2" }))).toBeNull();
      expect(await cache.liveFilesAt("b".repeat(40), ["m"], async () => live({ m: "v1" }))).toBeNull();
      const refused = async (): Promise<Map<string, Buffer | null>> => {
        throw new Error("a symlink");
      };
      expect(await cache.liveFilesAt(A, ["m"], refused)).toBeNull();
    });
  });
});
