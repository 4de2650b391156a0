// The real `pi` CLI (print mode, offline) loading this package through its package.json
// manifest (`-e <repo root>`), plus a test-only extension that registers Pi's faux model
// provider (tests/fixtures/faux-cli-extension.ts). Each run gets its own agent dir
// (PI_CODING_AGENT_DIR), HOME and Git identity; the user's Git configuration is never used.

import { spawn, spawnSync } from "node:child_process";
import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  realpathSync,
  rmSync,
  writeFileSync,
  existsSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { cwdKey, sessionIdOfKey } from "../../../storage/layout.ts";
import { StateStore } from "../../../storage/state-store.ts";
import { piPackageDir } from "../../support/pi-version.ts";
import { openStore } from "../../../storage/open-store.ts";
import { readTemporalState } from "../../../storage/core/temporal.ts";

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
const fauxExtension = join(repoRoot, "tests/fixtures/faux-cli-extension.ts");
const piPackage = piPackageDir;
const piCli = join(
  piPackage,
  (JSON.parse(readFileSync(join(piPackage, "package.json"), "utf8")) as { bin: { pi: string } }).bin.pi,
);

type Step = { say: string } | { call: string; args: Record<string, unknown> };

interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** Contexts the faux model received, one per inference. */
  contexts: { systemPrompt: string; messages: { role: string; content: unknown }[]; tools: string[] }[];
}

let root: string | undefined;
afterEach(() => {
  if (root) rmSync(root, { recursive: true, force: true });
  root = undefined;
});

function setup(config: Record<string, unknown> | string | null) {
  root = mkdtempSync(join(tmpdir(), "sf-cli-"));
  const agentDir = join(root, "agent");
  const cwd = join(root, "project");
  const home = join(root, "home");
  for (const dir of [agentDir, cwd, home]) mkdirSync(dir, { recursive: true });
  if (config !== null)
    writeFileSync(join(agentDir, "state-flow.json"), typeof config === "string" ? config : JSON.stringify(config));
  const gitConfig = join(root, "gitconfig");
  writeFileSync(gitConfig, "");
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^(GIT_|PI_|FAUX_CLI_|STATE_FLOW_)/.test(key)) continue;
    env[key] = value;
  }
  Object.assign(env, {
    HOME: home,
    PI_CODING_AGENT_DIR: agentDir,
    PI_OFFLINE: "1",
    GIT_CONFIG_GLOBAL: gitConfig,
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_AUTHOR_NAME: "State Flow CLI Test",
    GIT_AUTHOR_EMAIL: "cli-test@state-flow.invalid",
    GIT_COMMITTER_NAME: "State Flow CLI Test",
    GIT_COMMITTER_EMAIL: "cli-test@state-flow.invalid",
  });
  return {
    agentDir,
    cwd: realpathSync(cwd),
    env,
    storeRoot: join(agentDir, "state-flow"),
    contextsFile: join(root, "contexts.jsonl"),
  };
}

function runPi(
  dirs: ReturnType<typeof setup>,
  script: Step[],
  prompt: string,
  options: { loadRepo?: boolean; args?: string[]; skills?: boolean } = {},
): Promise<CliRun> {
  const args = [
    piCli,
    "--offline",
    "--no-session",
    "-nc",
    ...(options.skills ? [] : ["-ns"]),
    "-np",
    "--no-themes",
    ...(options.loadRepo === false ? [] : ["-e", repoRoot]),
    "-e",
    fauxExtension,
    "--provider",
    "faux-cli",
    "--model",
    "faux-1",
    ...(options.args ?? []),
    "-p",
    prompt,
  ];
  const env = { ...dirs.env, FAUX_CLI_SCRIPT: JSON.stringify(script), FAUX_CLI_CONTEXTS: dirs.contextsFile };
  return new Promise((done, fail) => {
    // stdin is closed: print mode would otherwise wait for piped input.
    const child = spawn(process.execPath, args, { cwd: dirs.cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
    child.on("error", fail);
    child.on("close", (code) => {
      clearTimeout(timer);
      const contexts = existsSync(dirs.contextsFile)
        ? readFileSync(dirs.contextsFile, "utf8")
            .trim()
            .split("\n")
            .filter(Boolean)
            .map((line) => JSON.parse(line) as CliRun["contexts"][number])
        : [];
      done({ code, stdout, stderr, contexts });
    });
  });
}

function messageText(message: { content: unknown }): string {
  if (typeof message.content === "string") return message.content;
  return (message.content as { type: string; text?: string }[]).map((b) => b.text ?? "").join("");
}

describe("the pi CLI with this package (-e <repo root>)", () => {
  it(
    "autoStart: the faux model patches state with final:true, " +
      "the answer is printed and committed to the Git store",
    async () => {
      const dirs = setup({ autoStart: true });
      const run = await runPi(
        dirs,
        [
          {
            call: "patch_state",
            args: {
              global: { contract: { style: "terse" } },
              cwd: { contract: { tool: "pi CLI" } },
              session: { working: { checked: "print mode" } },
              final: true,
            },
          },
          { say: "CLI answer: state recorded." },
        ],
        "Record that the CLI works",
      );
      expect(run.stderr).toBe("");
      expect(run.code).toBe(0);
      expect(run.stdout.trim()).toBe("CLI answer: state recorded.");

      // What the model saw: State Flow's tools and protocol, then the rebuilt state after the patch.
      expect(run.contexts).toHaveLength(2);
      const [first, second] = run.contexts;
      expect(first!.tools).toEqual(expect.arrayContaining(["patch_state", "read_state"]));
      expect(first!.systemPrompt).toContain("## State Flow protocol");
      const runtime = messageText(second!.messages[0]!);
      expect(runtime).toMatch(/^\[State Flow runtime context/);
      expect(runtime).toContain("Record that the CLI works");
      // patched in this run: in the runtime context's volatile part (here after the run's trajectory)
      expect(second!.messages.map(messageText).join("\n")).toContain('"checked": "print mode"');

      // The store: <agentDir>/state-flow/<cwd-key>/<session-key>/…, a Git repository with three commits.
      const cwdDir = join(dirs.storeRoot, cwdKey(dirs.cwd));
      const sessions = readdirSync(cwdDir, { withFileTypes: true }).filter((e) => e.isDirectory());
      expect(sessions).toHaveLength(1);
      const sessionKey = sessions[0]!.name;
      for (const file of ["checkpoint.json", "patches.jsonl", "meta.json", "config.json"])
        expect(existsSync(join(cwdDir, sessionKey, file))).toBe(true);
      for (const file of ["checkpoint.json", "patches.jsonl", "meta.json"]) {
        expect(existsSync(join(cwdDir, file))).toBe(true);
        expect(existsSync(join(dirs.storeRoot, file))).toBe(true);
      }
      expect(JSON.parse(readFileSync(join(cwdDir, sessionKey, "config.json"), "utf8"))).toMatchObject({
        enabled: true,
      });

      const log = spawnSync("git", ["log", "--format=%an|%s"], {
        cwd: dirs.storeRoot,
        env: dirs.env,
        encoding: "utf8",
      });
      expect(log.stdout.trim().split("\n")).toEqual([
        "State Flow CLI Test|state-flow: response",
        "State Flow CLI Test|state-flow: patch_state global+cwd+session",
        `State Flow CLI Test|state-flow: start session ${sessionKey}`,
      ]);

      const store = await openStore({ root: dirs.storeRoot, env: dirs.env });
      expect(store.kind).toBe("git");
      const runtime0 = await new StateStore(store, {
        cwd: dirs.cwd,
        cwdKey: cwdKey(dirs.cwd),
        sessionId: sessionIdOfKey(sessionKey),
        sessionKey,
      }).loadCurrent();
      expect(runtime0).not.toBeNull();
      const now = readTemporalState(runtime0!.view);
      expect(now.boundary.step).toBe(2);
      expect(now.state).toEqual({
        artifacts: {},
        contract: { style: "terse", tool: "pi CLI" },
        working: { checked: "print mode" },
        response: "CLI answer: state recorded.",
      });
      expect(readTemporalState(runtime0!.view, 1, "session").state).toMatchObject({
        working: { checked: "print mode" },
        response: "",
      });
      expect(readTemporalState(runtime0!.view, 0, "global").state.contract).toEqual({ style: "terse" });
      expect(readTemporalState(runtime0!.view, 0, "cwd").state.contract).toEqual({ tool: "pi CLI" });
    },
    30_000,
  );

  it("manual default: without autoStart the CLI stays ordinary Pi and creates no store", async () => {
    const dirs = setup(null);
    const run = await runPi(dirs, [{ say: "Plain Pi answer." }], "Hello");
    expect(run.code).toBe(0);
    expect(run.stdout.trim()).toBe("Plain Pi answer.");
    expect(run.contexts).toHaveLength(1);
    expect(run.contexts[0]!.tools).not.toContain("patch_state");
    expect(run.contexts[0]!.tools).not.toContain("read_state");
    expect(run.contexts[0]!.systemPrompt).not.toContain("State Flow protocol");
    expect(existsSync(dirs.storeRoot)).toBe(false);
  }, 30_000);

  it("print mode has no UI: a start that fails without a Git identity says so on stderr, in one line", async () => {
    const dirs = setup(null);
    for (const key of Object.keys(dirs.env)) if (/^GIT_(AUTHOR|COMMITTER)_/.test(key)) delete dirs.env[key];
    dirs.env.EMAIL = "";
    const run = await runPi(dirs, [], "/state-flow-start");
    expect(run.stderr).toBe(
      `[state-flow] error: State Flow start failed: Git has no commit identity (user.name and user.email) for ` +
        `the State Flow store ${dirs.storeRoot} (git: no email was given and auto-detection is disabled), and ` +
        `State Flow does not invent one. Set it for all your repositories: git config --global user.name ` +
        `"Your Name" && git config --global user.email "you@example.com"; or for this store only: ` +
        `git -C ${dirs.storeRoot} config user.name "Your Name" && git -C ${dirs.storeRoot} config user.email ` +
        `"you@example.com". Nothing was enabled; run /state-flow-start again once that is fixed.\n`,
    );
    expect(run.stdout).toBe("");
    expect(run.code, "a failed start is a failed command").toBe(1);
  }, 30_000);

  it("print mode: /state-flow-start says what was enabled and where; /state-flow-status shows the report", async () => {
    const manual = setup({});
    const start = await runPi(manual, [], "/state-flow-start");
    expect(start.code).toBe(0);
    expect(start.stderr).toContain(
      `[state-flow] info: State Flow is on for this branch; its state is kept in ${manual.storeRoot} (Git, no ` +
        "remote: commits stay local). From now on the model sees the state and the current run instead of the " +
        "whole transcript (the next run still sees the conversation so far, to carry what matters into state). " +
        "/state-flow-status shows it; /state-flow-stop turns it off.\n" +
        // Pi saves no session without a conversation: the start it held is removed when it ends.
        "[state-flow] info: Pi did not save this session (it ended before any conversation), so it cannot be " +
        `resumed: State Flow removed the session state it had started, ${manual.storeRoot}/`,
    );

    const status = await runPi(setup({ autoStart: true }), [], "/state-flow-status");
    expect(status.code).toBe(0);
    // (the automatic start of a session Pi never saved is removed at exit too, but nobody asked for it: unsaid)
    expect(status.stderr).not.toContain("Pi did not save this session");
    // (stderr: Pi keeps stdout for its own output in print mode and routes an extension's writes there)
    expect(status.stdout).toBe("");
    const lines = status.stderr.split("\n");
    expect(lines.slice(0, 3)).toEqual([
      "State Flow status",
      "",
      expect.stringMatching(/^State Flow: on \(step 0\) — /),
    ]);
    expect(status.stderr).toMatch(/\nStore: .*state-flow — Git: every accepted change is a commit\n/);
    expect(status.stderr).toContain("\nRemote: none — commits stay in the store");
    expect(status.stderr).toContain("\nProblems: none found\n");
  }, 30_000);

  it("print mode: an answer refused after every retry is named on stderr and exits 1", async () => {
    const dirs = setup({ autoStart: true });
    const script = [{ say: "First try." }, { say: "Second try." }, { say: "Third try." }];
    const run = await runPi(dirs, script, "Answer without patching");
    expect(run.contexts).toHaveLength(3);
    expect(run.stderr).toMatch(
      /\[state-flow\] error: State Flow did not accept the answer: after 3 attempts the model still answered/,
    );
    expect(run.stdout.trim(), "Pi still prints the model's last draft").toBe("Third try.");
    expect(run.code).toBe(1);
  }, 30_000);

  it("pi --tools read: State Flow says its tools are not active, sends no protocol; the answer stands", async () => {
    const dirs = setup({ autoStart: true });
    const run = await runPi(dirs, [{ say: "Plain answer." }], "Hello", { args: ["--tools", "read"] });
    expect(run.stderr).toMatch(/\[state-flow\] warning: State Flow is enabled, but its tools are not active/);
    expect(run.stderr.match(/its tools are not active/g)).toHaveLength(1);
    expect(run.contexts).toHaveLength(1);
    expect(run.contexts[0]!.tools).toEqual(["read"]);
    expect(run.contexts[0]!.systemPrompt).not.toContain("State Flow protocol");
    expect(run.stdout.trim()).toBe("Plain answer.");
    expect(run.code).toBe(0);
  }, 30_000);

  it("an invalid state-flow.json does not stop Pi: the run answers, stderr names the file, key and fix", async () => {
    const dirs = setup({ autoStart: "yes" });
    const run = await runPi(dirs, [{ say: "Plain answer." }], "Hello");
    expect(run.code).toBe(0);
    expect(run.stdout.trim()).toBe("Plain answer.");
    const file = join(dirs.agentDir, "state-flow.json");
    expect(run.stderr).toBe(
      `[state-flow] error: State Flow is off: ${file}: "autoStart" = "yes" must be true or false; correct the ` +
        "value, or remove the key to use its default. Then run /reload (or restart Pi) to load it; until then it " +
        "adds no tools and reads or writes no state.\n",
    );
    expect(run.contexts).toHaveLength(1);
    expect(run.contexts[0]!.tools).not.toContain("patch_state");
    expect(run.contexts[0]!.systemPrompt).not.toContain("State Flow protocol");
    expect(existsSync(dirs.storeRoot)).toBe(false);
  }, 30_000);

  it("malformed state-flow.json: /state-flow-start fails with the error once, in print and JSON mode", async () => {
    for (const args of [[], ["--mode", "json"]]) {
      const dirs = setup('{ "autoStart": tru');
      const run = await runPi(dirs, [{ say: "never" }], "/state-flow-start", { args });
      expect(run.stderr.match(/\[state-flow\] error: /g), `${args}: one line`).toHaveLength(1);
      expect(run.stderr).toMatch(/State Flow is off: .*state-flow\.json: invalid JSON \(.*\); fix the file or remove/);
      expect(run.code, "the start did not happen").toBe(1);
      expect(run.contexts, "the command is not a prompt").toHaveLength(0);
      expect(existsSync(dirs.storeRoot)).toBe(false);
      rmSync(root!, { recursive: true, force: true });
    }
  }, 60_000);

  it("pi install <repo path> registers the package; a later run loads State Flow and its Skill", async () => {
    const dirs = setup({ autoStart: true });
    const install = spawnSync(process.execPath, [piCli, "install", repoRoot], {
      cwd: dirs.cwd,
      env: dirs.env,
      encoding: "utf8",
      timeout: 30_000,
    });
    expect(install.status, install.stderr).toBe(0);
    expect(install.stdout).toContain(`Installed ${repoRoot}`);
    const run = await runPi(
      dirs,
      [
        { call: "patch_state", args: { session: { working: { installed: true } }, final: true } },
        { say: "Installed run." },
      ],
      "via install",
      { loadRepo: false, skills: true },
    );
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.trim()).toBe("Installed run.");
    expect(run.contexts[0]!.tools).toEqual(expect.arrayContaining(["patch_state", "read_state"]));
    // The package manifest's skills: Pi loads the bundled Skill; alone, it is not listed in every request.
    expect(run.contexts[0]!.systemPrompt).not.toContain("state-flow-memory");
    expect(existsSync(join(dirs.storeRoot, ".git"))).toBe(true);
    // Beside another Skill (Pi shows a listing anyway) it is listed with its path.
    mkdirSync(join(dirs.agentDir, "skills", "house-style"), { recursive: true });
    writeFileSync(
      join(dirs.agentDir, "skills", "house-style", "SKILL.md"),
      "---\nname: house-style\ndescription: House style for answers\n---\n# House style\n",
    );
    const listed = await runPi(dirs, [{ call: "patch_state", args: { final: true } }, { say: "Listed." }], "again", {
      loadRepo: false,
      skills: true,
    });
    expect(listed.code, listed.stderr).toBe(0);
    // (the contexts file is appended to: this run's inferences are its newest lines)
    expect(listed.contexts.at(-1)!.systemPrompt).toContain("<name>house-style</name>");
    expect(listed.contexts.at(-1)!.systemPrompt).toContain(join(repoRoot, "skills", "state-flow-memory", "SKILL.md"));
  }, 60_000);
});
