// The real `pi` binary (0.84.4, or 1.6.0 with STATE_FLOW_PI=1.6) run as a person runs it, loading this
// checkout with `-e`, against a scripted OpenAI-compatible model server on 127.0.0.1 that the test starts
// (tests/support/scripted-server.ts): print mode (`-p`, and `-c -p` to continue the session) and RPC mode
// (`--mode rpc`, JSON lines on stdin/stdout). Start, a run that patches and answers, status, stop, a bad
// state-flow.json and a store that refuses writes. Each test checks what the person sees (stdout, stderr,
// exit code; RPC's notify events) and what the model server received. Unlike tests/adapters/pi/cli.test.ts
// (Pi's faux provider, loaded as a second extension), nothing here is inside Pi: the model is a real HTTP
// provider configured in models.json, so the protocol, tools and tool results are checked on the wire.
// Every Pi process gets its own HOME, agent dir and project dir, a timeout, and is killed in afterEach.

import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from "node:child_process";
import { existsSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { holdForeignLock } from "../support/pi-harness.ts";
import {
  answerTo,
  createPiProfile,
  lastPrompt,
  piCli,
  protocolModel,
  repoRoot,
  type PiProfile,
} from "../support/pi-profile.ts";
import { PI_VERSION } from "../support/pi-version.ts";
import {
  messageText,
  pendingToolResults,
  requestText,
  startScriptedServer,
  systemPrompt,
  toolNames,
  type ChatRequest,
  type ScriptedServer,
} from "../support/scripted-server.ts";

/** A Pi process that outlives this is killed (a hang must fail the test, not the suite). */
const PROCESS_LIMIT_MS = 30_000;
const PROTOCOL_HEADING = "## State Flow protocol";
const STATE_TOOLS = ["patch_state", "read_state"];

// ── What the person sees ──────────────────────────────────────────────────────────────────────────────
// What start, status, stop and a bad state-flow.json show on the terminal, in one place.

const STARTED =
  /^State Flow is on for this branch; its state is kept in .*state-flow \(Git, no remote: commits stay local\)\. /;

/**
 * `pi -c -p "/state-flow-status"`: the report on stderr (Pi keeps stdout for its own output in print mode);
 * stdout is the session's previous answer, which Pi's print mode prints again after every prompt it handles.
 */
function expectStatusSaid(run: PrintRun, previousAnswer: string): void {
  expect({ code: run.code, stdout: run.stdout }).toEqual({ code: 0, stdout: `${previousAnswer}\n` });
  expect(run.stderr).toMatch(/^State Flow status\n\nState Flow: on \(step \d+\) — /);
  expect(run.stderr).toContain("\nRemote: none — commits stay in the store");
}

const STOP_NOTICE =
  "State Flow is off for this branch: ordinary Pi from now on. Nothing is deleted: the state at this point " +
  "is kept, and the model sees it once more as a frozen handoff. /state-flow-start turns it back on.";

/** `/state-flow-stop` in print mode: one notice on stderr. */
function expectStopSaid(run: PrintRun): void {
  expect(run.stderr).toBe(`[state-flow] info: ${STOP_NOTICE}\n`);
}

/**
 * A state-flow.json that is not JSON: State Flow turns itself off and names the file and the fix, and Pi
 * itself runs (issue 29): the prompt is answered as ordinary Pi, without State Flow's tools or protocol.
 */
function expectBadConfigSaid(run: PrintRun, configFile: string, requests: ChatRequest[]): void {
  expect(run.code).toBe(0);
  expect(run.stderr).toContain(`[state-flow] error: State Flow is off: ${configFile}: invalid JSON`);
  expect(run.stderr).toContain("fix the file or remove it to use defaults. Then run /reload (or restart Pi)");
  expect(run.stdout).not.toBe("");
  expect(requests.length).toBeGreaterThan(0);
  for (const request of requests) expect(toolNames(request)).not.toContain("patch_state");
}

/** RPC with that file: Pi runs; the error is said at the session's start and as /state-flow-status's answer. */
function expectRpcBadConfigSaid(pi: RpcPi, end: RpcEnd, configFile: string): void {
  expect(end).toEqual({ code: 0, stderr: "" });
  const said = expect.stringContaining(`error: State Flow is off: ${configFile}: invalid JSON`);
  expect(rpcNotices(pi.events)).toEqual([said, said]);
}

/** Each answer State Flow did not accept is marked (the 2nd and 3rd attempts follow), its patch refused. */
const DISCARDED = (attempt: number) =>
  "State Flow did not accept that answer: its patch_state was refused, so the answer could not be recorded. It is " +
  `asked to do that and answer again (attempt ${attempt} of 3).`;

/** A run whose patch the store refused: the answer is printed, the refusal is an error on stderr, exit 1. */
function expectRefusalSaid(run: PrintRun, answer: string): void {
  expect(run.code).toBe(1);
  expect(run.stdout).toBe(`${answer}\n`);
  const lines = run.stderr.trimEnd().split("\n");
  expect(lines.slice(0, 2)).toEqual([`[state-flow] info: ${DISCARDED(2)}`, `[state-flow] info: ${DISCARDED(3)}`]);
  expect(lines[2]).toMatch(
    /^\[state-flow\] error: State Flow did not accept the answer: the model's patch_state calls were refused, .*lock/,
  );
}

/** The notices RPC mode sent (`extension_ui_request` notify events), as `level: message`. */
function rpcNotices(events: RpcEvent[]): string[] {
  return events
    .filter((e) => e.type === "extension_ui_request" && e.method === "notify")
    .map((e) => `${String(e.notifyType ?? "info")}: ${String(e.message)}`);
}

/** RPC `/state-flow-start`: the start notice, and the footer status `state-flow #0`. */
function expectRpcStartSaid(events: RpcEvent[]): void {
  expect(rpcNotices(events).map((n) => n.replace(/^info: /, ""))).toEqual([expect.stringMatching(STARTED)]);
  // (001's accent state-flow and dim #<step>: Pi's theme colours them, so RPC clients get its ANSI codes)
  const footers = events.filter((e) => e.method === "setStatus").map((e) => String(e.statusText));
  expect(footers.map((text) => text.replace(/\u001b\[[0-9;]*m/g, ""))).toContain("state-flow #0");
  // (whether the UI Pi's RPC mode hands an extension has a theme differs by version and moment: a styled
  // footer, where there is one, is the accent name and the dim step)
  for (const styled of footers.filter((text) => text.includes("\u001b[")))
    expect(styled).toMatch(/(\u001b\[[0-9;]*m)+state-flow(\u001b\[[0-9;]*m)+ (\u001b\[[0-9;]*m)+#0/);
}

/** RPC `/state-flow-status`: the report, as one info notice. */
function expectRpcStatusSaid(events: RpcEvent[]): void {
  expect(rpcNotices(events)).toEqual([
    expect.stringMatching(/^info: State Flow status\n\nState Flow: on \(step \d+\) — .*\n\nDetails\n/s),
  ]);
}

/** RPC `/state-flow-stop`: the stop notice. */
function expectRpcStopSaid(events: RpcEvent[]): void {
  expect(rpcNotices(events)).toEqual([`info: ${STOP_NOTICE}`]);
}

/** RPC: a run whose patch the store refused ends with one error notice. */
function expectRpcRefusalSaid(events: RpcEvent[]): void {
  expect(rpcNotices(events)).toEqual([
    `info: ${DISCARDED(2)}`,
    `info: ${DISCARDED(3)}`,
    expect.stringMatching(/^error: State Flow did not accept the answer: the model's patch_state calls were refused/),
  ]);
}

// ── The model server's script ─────────────────────────────────────────────────────────────────────────

/** The person's latest prompt (State Flow's own messages are user messages too: skipped). */
/** The answer the model gives to `prompt`. */
// ── Processes and their directories ───────────────────────────────────────────────────────────────────

type Dirs = PiProfile;

interface PrintRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

type RpcEvent = { type: string } & Record<string, unknown>;

interface RpcEnd {
  code: number | null;
  stderr: string;
}

const children = new Set<ChildProcessWithoutNullStreams>();
const servers: ScriptedServer[] = [];
const roots: string[] = [];

afterEach(async () => {
  // A child still running (a test failed while waiting for it) is killed by its PID; one that ended is left.
  for (const child of children)
    if (child.exitCode === null && child.signalCode === null && child.pid) process.kill(child.pid, "SIGKILL");
  children.clear();
  await Promise.all(servers.splice(0).map((server) => server.close()));
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

/** Starts the model server and writes a throwaway Pi profile pointing at it. */
async function setup(config?: string): Promise<{ dirs: Dirs; server: ScriptedServer }> {
  const server = await startScriptedServer(protocolModel);
  servers.push(server);
  const dirs = createPiProfile(server.baseUrl, config);
  roots.push(dirs.root);
  return { dirs, server };
}

function spawnPi(dirs: Dirs, args: string[], stdin: "ignore" | "pipe"): ChildProcessWithoutNullStreams {
  const argv = [piCli, "-e", repoRoot, "-nc", ...args];
  const child = spawn(process.execPath, argv, { cwd: dirs.cwd, env: dirs.env, stdio: [stdin, "pipe", "pipe"] });
  children.add(child as ChildProcessWithoutNullStreams);
  const timer = setTimeout(() => child.kill("SIGKILL"), PROCESS_LIMIT_MS);
  child.on("close", () => clearTimeout(timer));
  return child as ChildProcessWithoutNullStreams;
}

/** `pi [args] -p <messages…>` with stdin closed (print mode would otherwise wait for piped input). */
function printPi(dirs: Dirs, messages: string[], args: string[] = []): Promise<PrintRun> {
  const child = spawnPi(dirs, [...args, "-p", ...messages], "ignore");
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  return new Promise((done, fail) => {
    child.on("error", fail);
    child.on("close", (code) => done({ code, stdout, stderr }));
  });
}

/** `pi --mode rpc`: commands as JSON lines on stdin, events and responses as JSON lines on stdout. */
class RpcPi {
  readonly events: RpcEvent[] = [];
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly closed: Promise<RpcEnd>;
  private readonly listeners = new Set<() => void>();
  private ids = 0;

  constructor(dirs: Dirs, args: string[] = []) {
    this.child = spawnPi(dirs, ["--mode", "rpc", ...args], "pipe");
    let pending = "";
    let stderr = "";
    // RPC frames are split on "\n" only (rpc.md: readline would also split on U+2028 inside strings).
    this.child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      pending += chunk;
      let end: number;
      while ((end = pending.indexOf("\n")) >= 0) {
        const line = pending.slice(0, end).replace(/\r$/, "");
        pending = pending.slice(end + 1);
        if (line.trim()) this.events.push(JSON.parse(line) as RpcEvent);
      }
      for (const listener of this.listeners) listener();
    });
    this.child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    this.closed = new Promise((done, fail) => {
      this.child.on("error", fail);
      this.child.on("close", (code) => {
        for (const listener of this.listeners) listener();
        done({ code, stderr });
      });
    });
  }

  /** Sends one prompt (a command or a request); resolves with the events up to its end. */
  async prompt(message: string, options: { run: boolean }): Promise<RpcEvent[]> {
    const id = `p${++this.ids}`;
    const from = this.events.length;
    this.child.stdin.write(`${JSON.stringify({ id, type: "prompt", message })}\n`);
    await this.until(from, (e) => e.type === "response" && e.id === id);
    if (options.run) await this.until(from, (e) => e.type === "agent_settled");
    const events = this.events.slice(from);
    expect(events.find((e) => e.type === "response" && e.id === id)).toMatchObject({ success: true });
    return events;
  }

  /** Sends one RPC command (e.g. `fork`); resolves with its response's data and the events up to it. */
  async command(type: string, fields: Record<string, unknown> = {}): Promise<{ data: unknown; events: RpcEvent[] }> {
    const id = `c${++this.ids}`;
    const from = this.events.length;
    this.child.stdin.write(`${JSON.stringify({ id, type, ...fields })}\n`);
    await this.until(from, (e) => e.type === "response" && e.id === id);
    const events = this.events.slice(from);
    const response = events.find((e) => e.type === "response" && e.id === id)!;
    expect(response).toMatchObject({ success: true });
    return { data: response.data, events };
  }

  /** Closes stdin, as a client does when it is done: Pi shuts down. */
  end(): Promise<RpcEnd> {
    this.child.stdin.end();
    return this.closed;
  }

  private until(from: number, found: (event: RpcEvent) => boolean): Promise<void> {
    return new Promise((done, fail) => {
      const check = () => {
        if (this.events.slice(from).some(found)) {
          this.listeners.delete(check);
          done();
        } else if (this.child.exitCode !== null || this.child.signalCode !== null) {
          this.listeners.delete(check);
          fail(new Error(`pi --mode rpc ended before the expected event (exit ${this.child.exitCode})`));
        }
      };
      this.listeners.add(check);
      check();
    });
  }
}

// ── What the server received and what the store holds ─────────────────────────────────────────────────

/** The requests of one run that patched `prompt` and answered: the protocol, the tools, the accepted patch. */
function expectPatchedRun(requests: ChatRequest[], prompt: string): void {
  expect(requests).toHaveLength(2);
  const [patching, answering] = requests as [ChatRequest, ChatRequest];
  expect(systemPrompt(patching)).toContain(PROTOCOL_HEADING);
  expect(toolNames(patching)).toEqual(expect.arrayContaining(STATE_TOOLS));
  expect(lastPrompt(patching)).toBe(prompt);
  // The next request carries patch_state's result and a runtime context showing the patched value.
  const results = pendingToolResults(answering);
  expect(results.map(messageText)).toEqual([expect.stringMatching(/^Accepted transition step \d+ \(session\)/)]);
  expect(requestText(answering)).toContain(`"note": ${JSON.stringify(prompt)}`);
}

/** A run in passive mode: no State Flow tools, no protocol; the stop's frozen handoff is in the context. */
function expectPassiveRun(request: ChatRequest): void {
  expect(toolNames(request)).not.toEqual(expect.arrayContaining(["patch_state"]));
  expect(toolNames(request)).not.toContain("read_state");
  expect(systemPrompt(request)).not.toContain(PROTOCOL_HEADING);
  expect(requestText(request)).toContain("[State Flow stopped — frozen exit handoff");
}

/** The one session directory of the project in the store, and the store's commit subjects, newest first. */
function storeOf(dirs: Dirs): { session: string; subjects: string[] } {
  const projects = readdirSync(dirs.storeRoot, { withFileTypes: true }).filter(
    (e) => e.isDirectory() && e.name !== ".git",
  );
  expect(projects).toHaveLength(1);
  const project = join(dirs.storeRoot, projects[0]!.name);
  const sessions = readdirSync(project, { withFileTypes: true }).filter((e) => e.isDirectory());
  expect(sessions).toHaveLength(1);
  const log = spawnSync("git", ["-C", dirs.storeRoot, "log", "--format=%an|%s"], { env: dirs.env, encoding: "utf8" });
  expect(log.status).toBe(0);
  return { session: join(project, sessions[0]!.name), subjects: log.stdout.trim().split("\n") };
}

/** Pi's session files (agent dir `sessions/`): those Pi saved. */
function sessionFiles(dirs: Dirs): string[] {
  const root = join(dirs.agentDir, "sessions");
  if (!existsSync(root)) return [];
  return readdirSync(root, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".jsonl"));
}

function readPatches(session: string): { scope: string; step: number; patch: unknown }[] {
  return readFileSync(join(session, "patches.jsonl"), "utf8")
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as { scope: string; step: number; patch: unknown });
}

const lockFile = (dirs: Dirs) => join(dirs.storeRoot, ".git", "state-flow-publication.lock");

// ── The scenarios ─────────────────────────────────────────────────────────────────────────────────────

describe(`the pi ${PI_VERSION} binary with State Flow (-e <checkout>) against a scripted model server`, () => {
  describe("print mode (-p)", () => {
    it("/state-flow-start alone: Pi saves no session, so the start is removed again and said so", async () => {
      const { dirs, server } = await setup();
      const run = await printPi(dirs, ["/state-flow-start"]);
      expect({ code: run.code, stdout: run.stdout }).toEqual({ code: 0, stdout: "" });
      const [started, removed, ...rest] = run.stderr.trimEnd().split("\n");
      expect(started!.replace("[state-flow] info: ", "")).toMatch(STARTED);
      expect(removed).toMatch(
        /^\[state-flow\] info: Pi did not save this session \(it ended before any conversation\), /,
      );
      expect(removed).toContain(
        `so it cannot be resumed: State Flow removed the session state it had started, ${dirs.storeRoot}/`,
      );
      expect(removed).toMatch(/\. Start State Flow in a session you continue \(pi -c\), or together with a request\.$/);
      expect(rest).toEqual([]);
      expect(server.requests).toEqual([]);
      // Pi wrote no session file (0.84.4 writes one at the first assistant message, 1.6.0 at the first user message)
      expect(sessionFiles(dirs)).toEqual([]);
      // The store keeps its shared files and the history of both publications, but no session folder.
      const projects = readdirSync(dirs.storeRoot, { withFileTypes: true }).filter(
        (e) => e.isDirectory() && e.name !== ".git",
      );
      expect(projects).toHaveLength(1);
      expect(
        readdirSync(join(dirs.storeRoot, projects[0]!.name), { withFileTypes: true }).filter((e) => e.isDirectory()),
      ).toEqual([]);
      const log = spawnSync("git", ["-C", dirs.storeRoot, "log", "--format=%an|%s"], {
        env: dirs.env,
        encoding: "utf8",
      });
      expect(log.stdout.trim().split("\n")).toEqual([
        expect.stringMatching(/^CLI Person\|state-flow: remove session .* \(Pi never saved the session\)$/),
        expect.stringMatching(/^CLI Person\|state-flow: start session /),
      ]);
    });

    it("/state-flow-start with a request: the session and its store folder stay", async () => {
      const { dirs, server } = await setup();
      const prompt = "Remember that the lighthouse is green";
      const run = await printPi(dirs, ["/state-flow-start", prompt]);
      expect({ code: run.code, stdout: run.stdout }).toEqual({ code: 0, stdout: `${answerTo(prompt)}\n` });
      expect(run.stderr).not.toContain("Pi did not save this session");
      expect(server.requests.length).toBeGreaterThan(0);
      const store = storeOf(dirs);
      expect(JSON.parse(readFileSync(join(store.session, "config.json"), "utf8"))).toMatchObject({ enabled: true });
      expect(store.subjects.at(-1)).toMatch(/^CLI Person\|state-flow: start session /);
      expect(store.subjects.join("\n")).not.toContain("remove session");
      expect(sessionFiles(dirs)).toHaveLength(1);
    });

    it("autoStart, /state-flow-status alone: the automatic start Pi never saves is removed again, unsaid", async () => {
      const { dirs, server } = await setup(JSON.stringify({ autoStart: true }));
      const run = await printPi(dirs, ["/state-flow-status"]);
      expect({ code: run.code, stdout: run.stdout }).toEqual({ code: 0, stdout: "" });
      expect(run.stderr).toMatch(/^State Flow status\n\nState Flow: on \(step 0\) — /);
      // Nobody asked for this start: its removal is not said (a failed removal would be).
      expect(run.stderr).not.toContain("[state-flow]");
      expect(server.requests).toEqual([]);
      expect(sessionFiles(dirs)).toEqual([]);
      const log = spawnSync("git", ["-C", dirs.storeRoot, "log", "--format=%s"], { env: dirs.env, encoding: "utf8" });
      expect(log.stdout.trim().split("\n")).toEqual([
        expect.stringMatching(/^state-flow: remove session .* \(Pi never saved the session\)$/),
        expect.stringMatching(/^state-flow: start session /),
      ]);
    });

    it("autoStart: a run patches and answers; -c status; -c stop, then a run without State Flow's tools", async () => {
      const { dirs, server } = await setup(JSON.stringify({ autoStart: true }));
      const prompt = "Remember that the lighthouse is green";

      const run = await printPi(dirs, [prompt]);
      expect(run).toEqual({ code: 0, stdout: `${answerTo(prompt)}\n`, stderr: "" });
      expectPatchedRun(server.requests, prompt);
      const store = storeOf(dirs);
      expect(store.subjects).toEqual([
        "CLI Person|state-flow: response",
        "CLI Person|state-flow: patch_state session",
        expect.stringMatching(/^CLI Person\|state-flow: start session /),
      ]);
      expect(readPatches(store.session)).toEqual([
        expect.objectContaining({ scope: "session", step: 1, patch: { working: { note: prompt } } }),
        expect.objectContaining({ scope: "session", step: 2, patch: { response: answerTo(prompt) } }),
      ]);

      expectStatusSaid(await printPi(dirs, ["/state-flow-status"], ["-c"]), answerTo(prompt));
      expect(server.requests).toHaveLength(2);

      const after = "What colour is the lighthouse?";
      const stopped = await printPi(dirs, ["/state-flow-stop", after], ["-c"]);
      expectStopSaid(stopped);
      expect({ code: stopped.code, stdout: stopped.stdout }).toEqual({ code: 0, stdout: `${answerTo(after)}\n` });
      expect(server.requests).toHaveLength(3);
      expectPassiveRun(server.requests[2]!);
      expect(requestText(server.requests[2]!)).toContain(`"note": ${JSON.stringify(prompt)}`);
      expect(storeOf(dirs).subjects[0]).toBe("CLI Person|state-flow: stop");
      expect(JSON.parse(readFileSync(join(store.session, "config.json"), "utf8"))).toMatchObject({ enabled: false });
    });

    it("a state-flow.json that is not JSON", async () => {
      const { dirs, server } = await setup('{"autoStart": tru}');
      expectBadConfigSaid(await printPi(dirs, ["hello"]), dirs.configFile, server.requests);
    });

    it("a store that refuses writes: the model gets the refusal, the person an error and exit 1", async () => {
      const { dirs, server } = await setup(JSON.stringify({ autoStart: true }));
      const first = "Remember that the lighthouse is green";
      expect((await printPi(dirs, [first])).code).toBe(0);
      const before = storeOf(dirs);
      // Root ignores file modes, so the store is made unwritable the way State Flow itself refuses:
      // another writer holds its publication lock.
      holdForeignLock(lockFile(dirs));

      const second = "Remember that the lighthouse is red";
      const run = await printPi(dirs, [second], ["-c"]);
      expectRefusalSaid(run, answerTo(second));
      const refused = server.requests.slice(2);
      expect(lastPrompt(refused[0]!)).toBe(second);
      expect(pendingToolResults(refused[1]!).map(messageText)).toEqual([
        expect.stringContaining(`The State Flow publication lock ${lockFile(dirs)} is held by an unknown owner`),
      ]);
      expect(storeOf(dirs).subjects).toEqual(before.subjects);
      expect(readPatches(before.session).map((p) => p.patch)).not.toContainEqual({ working: { note: second } });
    });
    it("the provider refuses a request (HTTP 400): Pi's error, exit 1; the next run (-c) carries it", async () => {
      const { dirs, server } = await setup(JSON.stringify({ autoStart: true }));
      const refused = "Remember that the lighthouse is green";
      server.script = (request, index) =>
        index === 0 ? { status: 400, error: "scripted bad request" } : protocolModel(request);
      const run = await printPi(dirs, [refused]);
      expect(run).toEqual({
        code: 1,
        stdout: "",
        stderr: '400: {"message":"scripted bad request","type":"invalid_request_error"}\n',
      });
      expect(server.requests).toHaveLength(1);
      expect(storeOf(dirs).subjects).toEqual([expect.stringMatching(/^CLI Person\|state-flow: start session /)]);

      const next = "What colour is the lighthouse?";
      expect(await printPi(dirs, [next], ["-c"])).toEqual({ code: 0, stdout: `${answerTo(next)}\n`, stderr: "" });
      // Issue 28: the refused request is carried into the next run's runtime context, not replayed.
      const carried = server.requests[1]!.messages.map(messageText);
      expect(carried.filter((text) => text.includes(`- ${refused}`))).toEqual([
        expect.stringMatching(/^\[State Flow runtime context[^]*interrupted before an answer was accepted/),
      ]);
      expect(carried).not.toContain(refused);
      expectPatchedRun(server.requests.slice(1), next);
    });
  });

  describe("RPC mode (--mode rpc)", () => {
    it("start, a run that patches and answers, status, stop, a run without State Flow's tools", async () => {
      const { dirs, server } = await setup();
      const pi = new RpcPi(dirs);

      const started = await pi.prompt("/state-flow-start", { run: false });
      expectRpcStartSaid(started);

      const prompt = "Remember that the lighthouse is green";
      const run = await pi.prompt(prompt, { run: true });
      expectPatchedRun(server.requests, prompt);
      const answers = run.filter((e) => e.type === "message_end").map((e) => e.message as { role: string });
      expect(answers.filter((m) => m.role === "assistant").at(-1)).toMatchObject({
        content: [{ type: "text", text: answerTo(prompt) }],
      });
      expect(rpcNotices(run)).toEqual([]);

      const status = await pi.prompt("/state-flow-status", { run: false });
      expectRpcStatusSaid(status);
      expect(server.requests).toHaveLength(2);

      const stopped = await pi.prompt("/state-flow-stop", { run: false });
      expectRpcStopSaid(stopped);
      await pi.prompt("What colour is the lighthouse?", { run: true });
      expect(server.requests).toHaveLength(3);
      expectPassiveRun(server.requests[2]!);

      expect(await pi.end()).toEqual({ code: 0, stderr: "" });
      expect(storeOf(dirs).subjects[0]).toBe("CLI Person|state-flow: stop");
    });

    it("/state-flow-history, then /state-flow-fork 2: a new session from that boundary, its own copy", async () => {
      const { dirs, server } = await setup();
      const pi = new RpcPi(dirs);
      await pi.prompt("/state-flow-start", { run: false });
      await pi.prompt("Remember the first thing", { run: true });
      await pi.prompt("Remember the second thing", { run: true });
      const history = rpcNotices(await pi.prompt("/state-flow-history session", { run: false }));
      expect(history).toHaveLength(1);
      expect(history[0]).toMatch(/^info: State Flow history — the hot window/);
      // Offsets: 0 the second answer, 1 its patch, 2 the first answer (steps 4, 3, 2 after the start's 0).
      const forked = await pi.prompt("/state-flow-fork 2", { run: false });
      expect(rpcNotices(forked)).toEqual([
        expect.stringMatching(
          new RegExp(
            "^info: This session is a fork of a State Flow session: State Flow is on here, with its own copy of " +
              "the session state at the fork point \\(step 2, ",
          ),
        ),
      ]);
      const third = "Remember the third thing";
      await pi.prompt(third, { run: true });
      const firstOfFork = server.requests[4]!;
      expect(requestText(firstOfFork)).toContain('"note": "Remember the first thing"');
      expect(requestText(firstOfFork)).not.toContain("Remember the second thing");
      expect(toolNames(firstOfFork)).toEqual(expect.arrayContaining(STATE_TOOLS));
      expect(await pi.end()).toEqual({ code: 0, stderr: "" });
      // Two Pi sessions, two store sessions; the fork's start commit names its parent and step.
      const log = spawnSync("git", ["-C", dirs.storeRoot, "log", "--format=%s"], { env: dirs.env, encoding: "utf8" });
      expect(log.stdout).toMatch(/state-flow: start session \S+ as a fork of \S+ at step 2\n/);
    });

    it("Pi's own fork at the second prompt: the new session starts from the state the first run left", async () => {
      const { dirs, server } = await setup();
      const pi = new RpcPi(dirs);
      await pi.prompt("/state-flow-start", { run: false });
      await pi.prompt("Remember the first thing", { run: true });
      await pi.prompt("Remember the second thing", { run: true });
      const { data } = await pi.command("get_fork_messages");
      const second = (data as { messages: { entryId: string; text: string }[] }).messages.find(
        (m) => m.text === "Remember the second thing",
      )!;
      const forked = await pi.command("fork", { entryId: second.entryId });
      expect(forked.data).toMatchObject({ cancelled: false });
      // (the notice may arrive with the response or just after it)
      await pi.prompt("Remember a different second thing", { run: true });
      expect(rpcNotices(pi.events.slice(pi.events.indexOf(forked.events[0]!)))).toContainEqual(
        expect.stringMatching(/^info: This session is a fork of a State Flow session: State Flow is on here/),
      );
      const firstOfFork = server.requests[4]!;
      expect(requestText(firstOfFork)).toContain('"note": "Remember the first thing"');
      expect(requestText(firstOfFork)).not.toContain('"note": "Remember the second thing"');
      expect(await pi.end()).toEqual({ code: 0, stderr: "" });
    });

    it("a fork of an unsaved session (--no-session) starts off, says why; /state-flow-start turns it on", async () => {
      const { dirs, server } = await setup();
      const pi = new RpcPi(dirs, ["--no-session"]);
      await pi.prompt("/state-flow-start", { run: false });
      await pi.prompt("Remember the first thing", { run: true });
      await pi.prompt("Remember the second thing", { run: true });
      const { data } = await pi.command("get_fork_messages");
      const second = (data as { messages: { entryId: string; text: string }[] }).messages.at(-1)!;
      const from = pi.events.length;
      await pi.command("fork", { entryId: second.entryId });
      await pi.prompt("A question in the fork", { run: true });
      expect(rpcNotices(pi.events.slice(from))).toContainEqual(
        expect.stringMatching(/^warning: .*could not copy .*Why: Pi recorded no file for the session this fork/),
      );
      // Off, not failed closed: the prompt ran as plain Pi, without State Flow's tools.
      expect(server.requests).toHaveLength(5);
      expect(toolNames(server.requests[4]!)).not.toContain("patch_state");
      const started = await pi.prompt("/state-flow-start", { run: false });
      expectRpcStartSaid(started);
      expect(await pi.end()).toEqual({ code: 0, stderr: "" });
    });

    it("a store that refuses writes: the model gets the refusal, the person an error notice", async () => {
      const { dirs, server } = await setup(JSON.stringify({ autoStart: true }));
      const pi = new RpcPi(dirs);
      await pi.prompt("Remember that the lighthouse is green", { run: true });
      const before = storeOf(dirs).subjects;
      holdForeignLock(lockFile(dirs));

      const second = "Remember that the lighthouse is red";
      const run = await pi.prompt(second, { run: true });
      expectRpcRefusalSaid(run);
      expect(pendingToolResults(server.requests[3]!).map(messageText)).toEqual([
        expect.stringContaining(`The State Flow publication lock ${lockFile(dirs)} is held by an unknown owner`),
      ]);
      expect(await pi.end()).toEqual({ code: 0, stderr: "" });
      expect(storeOf(dirs).subjects).toEqual(before);
    });

    it("a state-flow.json that is not JSON", async () => {
      const { dirs, server } = await setup('{"autoStart": tru}');
      const pi = new RpcPi(dirs);
      await pi.prompt("/state-flow-status", { run: false });
      expectRpcBadConfigSaid(pi, await pi.end(), dirs.configFile);
      expect(server.requests).toEqual([]);
    });
  });
});
