import { describe, expect, it } from "vitest";
import { filePointerOf, isFilePointer, splitWrites } from "../../store/cohort-basis.ts";
import { sha256Hex } from "../../store/fs/fs-safe.ts";
import { cohortFixture } from "../support/store-fixtures.ts";

const { g, c, s } = cohortFixture();

describe("cohort basis", () => {
  it("computes exact-cohort pointers over the canonical listing", () => {
    const hashes = new Map<string, string | null>([
      ["b.json", null],
      ["a.json", sha256Hex("x")],
    ]);
    const listing = `state-flow file cohort v1\n${sha256Hex("x")} a.json\n- b.json\n`;
    const pointer = filePointerOf(hashes);
    expect(pointer.revision).toBe(`file:${sha256Hex(listing)}`);
    expect(pointer.revision).toMatch(/^file:[0-9a-f]{64}$/);
    expect(isFilePointer(pointer)).toBe(true);
    expect(isFilePointer({ revision: "file:ABC" })).toBe(false);
    expect(
      filePointerOf(
        new Map([
          ["a.json", sha256Hex("x")],
          ["b.json", null],
        ]),
      ),
    ).toEqual(pointer);
    expect(
      filePointerOf(
        new Map([
          ["a.json", sha256Hex("y")],
          ["b.json", null],
        ]),
      ),
    ).not.toEqual(pointer);
    const writes = new Map([s.meta!, g.meta, s.config!, c.patches, g.checkpoint].map((p) => [p, Buffer.from("x")]));
    const order = splitWrites(writes).puts.map(([path]) => path);
    expect(order).toEqual([g.checkpoint, c.patches, s.config, g.meta, s.meta]);
  });
});
