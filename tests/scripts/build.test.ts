// The build Pi's entry loads instead of the sources: one module graph holding every production source,
// none of Pi's packages (their values come in through PiHost), and a refusal naming a module that would
// import Pi at run time. Built into a temporary copy of the package, never into this checkout's dist/.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { buildPackage } from "../../scripts/build.mjs";
import { packageCopy } from "../support/package-copy.ts";

const work = mkdtempSync(join(tmpdir(), "sf-build-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe("npm run build", () => {
  it("builds every source the adapter needs into dist/, with Pi's packages nowhere in it", async () => {
    const root = packageCopy(join(work, "pkg"));
    const manifest = await buildPackage({ root });
    expect(manifest.entry).toMatch(/^state-flow-[\w-]+\.js$/);
    expect(manifest.sources).toContain("adapters/pi/extension.ts");
    expect(manifest.sources).toContain("runtime/flow-runtime.ts");
    expect(manifest.sources).toContain("storage/git/git-backend.ts"); // a lazily imported part: its own chunk
    expect(manifest.sources.some((s) => s.startsWith("tests/") || s.includes("node_modules"))).toBe(false);
    expect(manifest.sources).not.toContain("adapters/pi/state-flow.ts");
    // the versions of what is built in: a pull that changes them makes the build stale
    expect(manifest.sources).toContain("package-lock.json");
    const written = JSON.parse(readFileSync(join(root, "dist/state-flow.json"), "utf8"));
    expect(written).toEqual(manifest);
    const files = readdirSync(join(root, "dist")).filter((f) => f.endsWith(".js"));
    expect(files).toContain(manifest.entry);
    for (const file of files) {
      const code = readFileSync(join(root, "dist", file), "utf8");
      expect(code, file).not.toMatch(/^import\b[^;]*?from\s*["']@earendil-works\//m);
      expect(code, file).not.toMatch(/\bimport\(["']@earendil-works\//);
    }
    // xstate and valibot are built in; the two lazily loaded packages stay Node's to load.
    const main = readFileSync(join(root, "dist", manifest.entry), "utf8");
    expect(main).not.toMatch(/^import\b[^;]*?from\s*["'](xstate|valibot)["']/m);
    const imported = [
      ...files
        .map((f) => readFileSync(join(root, "dist", f), "utf8"))
        .join("\n")
        .matchAll(/(?:^import\b[^;]*?from\s*|\bimport\()["']([^"'.][^"']*)["']/gm),
    ].map((m) => m[1]!);
    expect(new Set(imported.filter((s) => !s.startsWith("node:")))).toEqual(
      new Set(["simple-git", "@statelyai/inspect"]),
    );
  });

  it("names files by content: a rebuild of changed sources loads as new modules, of the same does not", async () => {
    const root = packageCopy(join(work, "renamed"));
    const first = await buildPackage({ root });
    const same = await buildPackage({ root });
    expect(same.entry, "nothing changed: the same names").toBe(first.entry);
    const status = join(root, "runtime/status.ts");
    writeFileSync(status, readFileSync(status, "utf8").replace('"State Flow status"', '"State Flow status, rebuilt"'));
    const changed = await buildPackage({ root });
    expect(changed.entry, "a changed source: a new name, so a /reload's import is not Node's cached module").not.toBe(
      first.entry,
    );
    expect(readdirSync(join(root, "dist")), "the last build's files stay: a running Pi may import them").toEqual(
      expect.arrayContaining([...first.files, ...changed.files]),
    );
    writeFileSync(
      status,
      readFileSync(status, "utf8").replace("State Flow status, rebuilt", "State Flow status, again"),
    );
    const again = await buildPackage({ root });
    expect(readdirSync(join(root, "dist")).sort(), "the build before the last is gone").toEqual(
      [...new Set(["state-flow.json", ...changed.files, ...again.files])].sort(),
    );
  });

  it("refuses a module that imports Pi at run time, naming the package and where its value comes from", async () => {
    const root = packageCopy(join(work, "bad"));
    writeFileSync(
      join(root, "adapters/pi/bad.ts"),
      'import { VERSION } from "@earendil-works/pi-coding-agent";\nexport const v = VERSION;\n',
    );
    await expect(buildPackage({ root, input: "adapters/pi/bad.ts" })).rejects.toThrow(
      /imports @earendil-works\/pi-coding-agent at run time: take the value from PiHost/,
    );
    // A type-only import is no run-time import: it builds.
    writeFileSync(
      join(root, "adapters/pi/typed.ts"),
      'import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";\n' +
        "export const f = (pi: ExtensionAPI) => pi;\n",
    );
    await expect(buildPackage({ root, input: "adapters/pi/typed.ts" })).resolves.toMatchObject({
      sources: ["adapters/pi/typed.ts", "package-lock.json"],
    });
  });

  it("without rolldown (npm install --omit=dev) the build is skipped with one line and nothing is written", () => {
    const root = packageCopy(join(work, "no-dev"));
    const hook = join(work, "no-rolldown.mjs");
    writeFileSync(
      hook,
      'import { registerHooks } from "node:module";\n' +
        "registerHooks({ resolve(specifier, context, next) {\n" +
        '  if (specifier === "rolldown")\n' +
        '    throw Object.assign(new Error("not installed"), { code: "ERR_MODULE_NOT_FOUND" });\n' +
        "  return next(specifier, context);\n} });\n",
    );
    const run = spawnSync(process.execPath, ["--import", pathToFileURL(hook).href, "scripts/build.mjs"], {
      cwd: root,
      encoding: "utf8",
    });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stderr.trim()).toBe(
      "state-flow: build skipped (rolldown, a dev dependency, is not installed); Pi loads the sources",
    );
    expect(existsSync(join(root, "dist"))).toBe(false);
    // and with it, the same script builds
    const built = spawnSync(process.execPath, ["scripts/build.mjs"], { cwd: root, encoding: "utf8" });
    expect(built.status, built.stderr).toBe(0);
    expect(existsSync(join(root, "dist/state-flow.json"))).toBe(true);
  });
});
