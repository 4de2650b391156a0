import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { PI_VERSION, piPackageDir } from "./support/pi-version.ts";

describe("toolchain", () => {
  it("runs on the pinned Node >= 22.19 that Pi 0.84 needs", () => {
    const [major, minor] = process.versions.node.split(".").map(Number) as [number, number];
    expect(major > 22 || (major === 22 && minor >= 19)).toBe(true);
  });

  it("loads the Pi this run selected: the project's 0.84.4, or compat/pi-1.6's 1.6.0 with STATE_FLOW_PI=1.6", () => {
    const expected = process.env.STATE_FLOW_PI === "1.6" ? "1.6.0" : "0.84.4";
    expect(PI_VERSION).toBe(expected);
    const cli = JSON.parse(readFileSync(`${piPackageDir}/package.json`, "utf8")) as { version: string };
    expect(cli.version, "the CLI tests spawn the same Pi").toBe(expected);
  });
});
