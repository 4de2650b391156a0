import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { readKnownBlobs, writeKnownBlobs } from "../../../store/git/known-blobs.ts";
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
});
