// Which form Pi loads: the build while no source it holds is newer, else the sources — each time saying
// why, with the command that makes the build current. Real files and modification times, no Pi.
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { packageForm } from "../../../adapters/pi/package-form.ts";

let root: string;
afterEach(() => rmSync(root, { recursive: true, force: true }));

/** A package with two sources and a build of them; `age` seconds between the sources and the build. */
function built(age = 60): string {
  root = mkdtempSync(join(tmpdir(), "sf-form-"));
  mkdirSync(join(root, "adapters/pi"), { recursive: true });
  mkdirSync(join(root, "dist"));
  for (const file of ["adapters/pi/a.ts", "adapters/pi/b.ts"]) writeFileSync(join(root, file), "export {};\n");
  writeFileSync(join(root, "dist/state-flow.js"), "export {};\n");
  const manifest = { entry: "state-flow.js", sources: ["adapters/pi/a.ts", "adapters/pi/b.ts"] };
  writeFileSync(join(root, "dist/state-flow.json"), JSON.stringify(manifest));
  const now = Date.now() / 1000;
  for (const file of ["adapters/pi/a.ts", "adapters/pi/b.ts"]) utimesSync(join(root, file), now - age, now - age);
  utimesSync(join(root, "dist/state-flow.js"), now, now);
  return root;
}

const rebuild = (at: string) => `\`npm run build\` in ${at} makes Pi's start faster`;

describe("packageForm", () => {
  it("loads the build while every source it holds is at most as new as it", () => {
    const form = packageForm(built(), {});
    expect(form.build).toBe(pathToFileURL(join(root, "dist/state-flow.js")).href);
    expect(form.said).toMatch(/^the build in dist\/ \(from 2 files, \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\)$/);
  });

  it("loads the sources when one changed after the build, naming it", () => {
    built();
    const later = Date.now() / 1000 + 5;
    utimesSync(join(root, "adapters/pi/b.ts"), later, later);
    expect(packageForm(root, {})).toEqual({
      build: null,
      said: `its TypeScript sources: adapters/pi/b.ts changed after the build in dist/; ${rebuild(root)}`,
    });
  });

  it("loads the sources without a build, with a broken manifest, a missing entry or a source gone", () => {
    built();
    rmSync(join(root, "adapters/pi/a.ts"));
    expect(packageForm(root, {}).said).toBe(
      `its TypeScript sources: adapters/pi/a.ts, built into dist/, is gone; ${rebuild(root)}`,
    );
    rmSync(join(root, "dist/state-flow.js"));
    expect(packageForm(root, {}).said).toBe(`its TypeScript sources: dist/state-flow.js is missing; ${rebuild(root)}`);
    writeFileSync(join(root, "dist/state-flow.json"), '{"entry": 1}');
    expect(packageForm(root, {}).said).toBe(
      `its TypeScript sources: dist/state-flow.json is not a build manifest; ${rebuild(root)}`,
    );
    writeFileSync(join(root, "dist/state-flow.json"), "{");
    expect(packageForm(root, {}).said).toMatch(/^its TypeScript sources: dist\/state-flow.json cannot be read \(/);
    rmSync(join(root, "dist"), { recursive: true });
    expect(packageForm(root, {})).toEqual({
      build: null,
      said: `its TypeScript sources: no build in dist/; ${rebuild(root)}`,
    });
  });

  it("loads the sources when STATE_FLOW_SOURCES=1 asks for them, whatever the build", () => {
    built();
    expect(packageForm(root, { STATE_FLOW_SOURCES: "1" })).toEqual({
      build: null,
      said: "its TypeScript sources: STATE_FLOW_SOURCES=1 asks for them",
    });
    expect(packageForm(root, { STATE_FLOW_SOURCES: "0" }).build).not.toBeNull();
  });
});
