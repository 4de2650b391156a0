// What Pi loads from the package (package.json `pi.extensions`: adapters/pi/state-flow.ts), run as a person
// runs it: the real `pi` binary with `-e` on a copy of the package, against a scripted model server on
// 127.0.0.1. Built, Pi runs the build in dist/ and /state-flow-status says so; a source changed since
// the build, Pi runs the sources and the status says which and what to run — and running it brings the
// build back; a build that cannot load leaves State Flow running from its sources, the reason said.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { buildPackage } from "../../../scripts/build.mjs";
import { packageCopy } from "../../support/package-copy.ts";
import { answerTo, createPiProfile, piCli, protocolModel, type PiProfile } from "../../support/pi-profile.ts";
import { startScriptedServer, type ScriptedServer } from "../../support/scripted-server.ts";

const work = mkdtempSync(join(tmpdir(), "sf-entry-"));
const servers: ScriptedServer[] = [];
const roots: string[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

async function profile(): Promise<PiProfile> {
  const server = await startScriptedServer(protocolModel);
  servers.push(server);
  const dirs = createPiProfile(server.baseUrl, JSON.stringify({ autoStart: true }));
  roots.push(dirs.root);
  return dirs;
}

/** `pi -e <pkg> -p <message>` with stdin closed; killed after 30 s. */
function printPi(dirs: PiProfile, pkg: string, message: string): Promise<{ code: number | null; out: string }> {
  const child = spawn(process.execPath, [piCli, "-e", pkg, "-nc", "-p", message], {
    cwd: dirs.cwd,
    env: dirs.env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (out += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (out += chunk));
  const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
  return new Promise((done, fail) => {
    child.on("error", fail);
    child.on("close", (code) => {
      clearTimeout(timer);
      done({ code, out });
    });
  });
}

const rebuild = (pkg: string) => `\`npm run build\` in ${pkg}`;
const loadedFrom = (out: string) => /\nPackage\n {2}State Flow loaded from (.*)\n/.exec(out)?.[1];

describe("the package entry Pi loads", () => {
  it("a built package: Pi runs the build, a run records and answers, status names the build", async () => {
    const pkg = packageCopy(join(work, "built"));
    const manifest = await buildPackage({ root: pkg });
    const dirs = await profile();
    const run = await printPi(dirs, pkg, "Hello");
    expect(run.code).toBe(0);
    expect(run.out.trim()).toBe(answerTo("Hello"));
    expect(existsSync(join(dirs.storeRoot, ".git"))).toBe(true);
    const status = await printPi(dirs, pkg, "/state-flow-status");
    expect(loadedFrom(status.out)).toMatch(
      new RegExp(`^the build in dist/ \\(from ${manifest.sources.length} files, \\d{4}-\\d\\d-\\d\\dT[\\d:]+Z\\)$`),
    );
  }, 60_000);

  it("a source changed since the build: Pi runs the sources, says which; `npm run build` brings it back", async () => {
    const pkg = packageCopy(join(work, "edited"));
    const { entry, sources } = await buildPackage({ root: pkg });
    // Sources, then the build, then one edited source, all in the past: the rebuild below is newer than all.
    const now = Date.now() / 1000;
    for (const source of sources) utimesSync(join(pkg, source), now - 90, now - 90);
    utimesSync(join(pkg, "dist", entry), now - 60, now - 60);
    utimesSync(join(pkg, "adapters/pi/controller.ts"), now - 30, now - 30);
    const dirs = await profile();
    const run = await printPi(dirs, pkg, "Hello again");
    expect(run.out.trim()).toBe(answerTo("Hello again"));
    expect(loadedFrom((await printPi(dirs, pkg, "/state-flow-status")).out)).toBe(
      "its TypeScript sources: adapters/pi/controller.ts changed after the build in dist/; " +
        `${rebuild(pkg)} makes Pi's start faster`,
    );
    // The advice, followed.
    const build = spawnSync("npm", ["run", "build"], { cwd: pkg, encoding: "utf8" });
    expect(build.status, build.stderr).toBe(0);
    expect(build.stdout).toMatch(/state-flow: built dist\/state-flow-[\w-]+\.js from \d+ files/);
    expect(loadedFrom((await printPi(dirs, pkg, "/state-flow-status")).out)).toMatch(/^the build in dist\//);
  }, 90_000);

  it("a build that cannot load: State Flow runs from its sources and the status says why", async () => {
    const pkg = packageCopy(join(work, "broken"));
    const { entry } = await buildPackage({ root: pkg });
    writeFileSync(join(pkg, "dist", entry), "export const = ;\n");
    const dirs = await profile();
    const run = await printPi(dirs, pkg, "Still here");
    expect(run.code).toBe(0);
    expect(run.out.trim()).toBe(answerTo("Still here"));
    expect(loadedFrom((await printPi(dirs, pkg, "/state-flow-status")).out)).toMatch(
      new RegExp(`^its TypeScript sources: the build in dist/ failed to load \\(.+\\); ${rebuild(pkg)} rebuilds it$`),
    );
  }, 60_000);
});
