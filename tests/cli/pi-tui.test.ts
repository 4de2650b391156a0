// The real `pi` TUI (0.84.4, or 1.6.0 with STATE_FLOW_PI=1.6) in a terminal, as a person uses it: tmux on a
// socket of its own (no user tmux config), `pi -e <checkout>` against the scripted model server, keys typed,
// the screen read back. Start, a run that patches and answers (the footer's step), status, history, /tree
// (the run's node reads as a person's words) and stop. Every wait polls the screen for what a person would
// read, with a limit; the tmux server is killed after each test. Without tmux on PATH the suite is skipped
// (and says so in vitest's report).
import { spawnSync } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { buildPackage } from "../../scripts/build.mjs";
import { packageCopy } from "../support/package-copy.ts";
import { createPiProfile, piCli, protocolModel, repoRoot, type PiProfile } from "../support/pi-profile.ts";
import { PI_VERSION } from "../support/pi-version.ts";
import { startScriptedServer, type ScriptedServer } from "../support/scripted-server.ts";

const hasTmux = spawnSync("tmux", ["-V"], { encoding: "utf8" }).status === 0;
/** How long one thing may take to appear on the screen. */
const SCREEN_LIMIT_MS = 20_000;

class Terminal {
  private readonly socket = `sf-tui-${process.pid}-${Date.now()}`;
  private readonly env: NodeJS.ProcessEnv;

  /** `pkg`: the package Pi loads with `-e` (this checkout, or a copy of it). */
  constructor(profile: PiProfile, pkg = repoRoot) {
    this.env = profile.env;
    const command = `cd '${profile.cwd}' && exec '${process.execPath}' '${piCli}' -e '${pkg}' -nc`;
    this.tmux("-f", "/dev/null", "new-session", "-d", "-s", "pi", "-x", "150", "-y", "50", command);
    // (tmux waits 500 ms after Escape for a key sequence by default: a person's Escape is a key of its own)
    this.tmux("set-option", "-s", "escape-time", "0");
  }

  private tmux(...args: string[]): string {
    const run = spawnSync("tmux", ["-L", this.socket, ...args], { env: this.env, encoding: "utf8" });
    if (run.status !== 0) throw new Error(`tmux ${args[0]} failed: ${run.stderr}`);
    return run.stdout;
  }

  screen(): string {
    return this.tmux("capture-pane", "-p", "-J", "-t", "pi");
  }

  /** Types `text` and Enter, as a person does. */
  async type(text: string): Promise<void> {
    this.tmux("send-keys", "-t", "pi", "-l", text);
    await new Promise((done) => setTimeout(done, 300)); // (the command list Pi opens on "/" settles first)
    this.tmux("send-keys", "-t", "pi", "Enter");
  }

  key(name: string): void {
    this.tmux("send-keys", "-t", "pi", name);
  }

  /** Resolves with the screen once `pattern` is on it; fails with the screen after SCREEN_LIMIT_MS. */
  shows(pattern: RegExp): Promise<string> {
    return this.until((screen) => pattern.test(screen), `showed ${pattern}`);
  }

  /** Resolves once `pattern` is no longer on the screen (a dialog closed). */
  hides(pattern: RegExp): Promise<string> {
    return this.until((screen) => !pattern.test(screen), `stopped showing ${pattern}`);
  }

  private async until(done: (screen: string) => boolean, what: string): Promise<string> {
    const until = Date.now() + SCREEN_LIMIT_MS;
    for (;;) {
      const screen = this.screen();
      if (done(screen)) return screen;
      if (Date.now() > until) throw new Error(`the screen never ${what}; it shows:\n${screen}`);
      await new Promise((wake) => setTimeout(wake, 150));
    }
  }

  close(): void {
    spawnSync("tmux", ["-L", this.socket, "kill-server"], { env: this.env });
  }
}

const open: { terminal?: Terminal; server?: ScriptedServer; root?: string } = {};

afterEach(async () => {
  open.terminal?.close();
  await open.server?.close();
  if (open.root) rmSync(open.root, { recursive: true, force: true });
  delete open.terminal;
  delete open.server;
  delete open.root;
});

describe.skipIf(!hasTmux)(`the pi ${PI_VERSION} TUI with State Flow, in tmux`, () => {
  it("start, a run, status, history, /tree and stop read as a person reads them", async () => {
    const server = (open.server = await startScriptedServer(protocolModel));
    const profile = createPiProfile(server.baseUrl);
    open.root = profile.root;
    const pi = (open.terminal = new Terminal(profile));
    await pi.shows(/mock-1/);

    await pi.type("/state-flow-start");
    await pi.shows(/State Flow is on for this branch; its state is kept in /);
    await pi.shows(/state-flow #0/);

    await pi.type("Remember that the lighthouse is green");
    await pi.shows(/Answer to: Remember that the lighthouse is green/);
    await pi.shows(/state-flow #2/);
    expect(server.requests).toHaveLength(2);

    await pi.type("/state-flow-status");
    await pi.shows(/State Flow: on \(step 2\) — the model works from the state below/);

    await pi.type("/state-flow-history");
    const history = await pi.shows(/State Flow history — the hot window \(offsets 0–2\)/);
    expect(history).toMatch(/ 1 {2}t-[0-9a-f]{8} {2}step 1 .*session: \+working\.note/);

    await pi.type("/tree");
    await pi.shows(/State Flow run started/);
    pi.key("Escape");
    await pi.hides(/State Flow run started/);

    await pi.type("/state-flow-stop");
    await pi.shows(/State Flow is off for this branch: ordinary Pi from now on/);
    await pi.shows(/state-flow stopped/);
    expect(server.requests).toHaveLength(2);
  }, 120_000);

  it("/reload after `npm run build` runs the new build, not the one Node loaded before", async () => {
    const server = (open.server = await startScriptedServer(protocolModel));
    const profile = createPiProfile(server.baseUrl);
    open.root = profile.root;
    const pkg = packageCopy(join(profile.root, "package"));
    await buildPackage({ root: pkg });
    const pi = (open.terminal = new Terminal(profile, pkg));
    await pi.shows(/mock-1/);
    await pi.type("/state-flow-status");
    await pi.shows(/State Flow loaded from the build in dist\//);
    expect(pi.screen()).not.toMatch(/State Flow status, rebuilt/);

    const status = join(pkg, "runtime/status.ts");
    writeFileSync(status, readFileSync(status, "utf8").replace('"State Flow status"', '"State Flow status, rebuilt"'));
    await buildPackage({ root: pkg });
    await pi.type("/reload");
    await pi.shows(/Reloaded/i);
    await pi.type("/state-flow-status");
    await pi.shows(/State Flow status, rebuilt/);
  }, 120_000);
});
