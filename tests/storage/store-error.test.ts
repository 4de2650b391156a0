import { describe, expect, it } from "vitest";
import { StoreError, errnoOf, isStoreError } from "../../storage/store-error.ts";

describe("StoreError", () => {
  it("carries a code, a file and a cause", () => {
    const cause = new Error("inner");
    const error = new StoreError("stale-basis", "moved", { file: "a/meta.json", cause });
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe("StoreError");
    expect(error.code).toBe("stale-basis");
    expect(error.file).toBe("a/meta.json");
    expect(error.cause).toBe(cause);
    expect(isStoreError(error)).toBe(true);
    expect(isStoreError(error, "stale-basis")).toBe(true);
    expect(isStoreError(error, "lock-held")).toBe(false);
    expect(isStoreError(new Error("x"))).toBe(false);
  });
  it("reads errno codes", () => {
    expect(errnoOf(Object.assign(new Error("x"), { code: "ENOENT" }))).toBe("ENOENT");
    expect(errnoOf(new Error("x"))).toBeUndefined();
    expect(errnoOf(null)).toBeUndefined();
  });
});
