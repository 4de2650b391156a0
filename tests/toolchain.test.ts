import { describe, expect, it } from "vitest";

describe("toolchain", () => {
  it("runs on the pinned Node >= 22.19 that Pi 0.84 needs", () => {
    const [major, minor] = process.versions.node.split(".").map(Number) as [number, number];
    expect(major > 22 || (major === 22 && minor >= 19)).toBe(true);
  });
});
