// Remote commands run without any way to prompt and are killed at their limit, ssh included. The
// remote that blocks is real: git reaches it through an ssh command that never answers
// (tests/support/blocking-remote.ts); the one that wants credentials is a real HTTP server.
import { spawn, type ChildProcess } from "node:child_process";
import { writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { GitCommandError, GitRunner, findGitExecutable } from "../../../storage/git/git-runner.ts";
import {
  REMOTE_TIMEOUT_MS,
  RemoteTimeoutError,
  batchSshCommand,
  execRemote,
  findWatchdog,
  noPromptEnv,
  remoteTimeoutMs,
} from "../../../storage/git/remote-process.ts";
import { BLOCKED_URL, alive, blockingSsh, until, type BlockingSsh } from "../../support/blocking-remote.ts";
import { initRepo, git, TempDirs } from "../../support/store-fixtures.ts";

const temps = new TempDirs();
const remotes: BlockingSsh[] = [];
const servers: Server[] = [];
const children: ChildProcess[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
  for (const remote of remotes.splice(0)) remote.killLeft();
  for (const server of servers.splice(0)) await new Promise((done) => server.close(done));
  temps.cleanup();
});
const GIT = findGitExecutable()!;

/** A repository whose `origin` is `url`, in an environment without any ssh command or askpass of the machine's. */
function repository(url: string, extraEnv: Record<string, string> = {}) {
  const { dir, env } = initRepo(temps, "sf-remote-process-");
  for (const name of ["GIT_SSH_COMMAND", "GIT_SSH", "GIT_ASKPASS", "SSH_ASKPASS", "STATE_FLOW_REMOTE_TIMEOUT_MS"])
    delete env[name];
  git(dir, env, "remote", "add", "origin", url);
  return { dir, env, runner: new GitRunner({ cwd: dir, env: { ...env, ...extraEnv }, binary: GIT }) };
}

function blocking(): BlockingSsh {
  const remote = blockingSsh(temps.make("sf-blocking-ssh-"));
  remotes.push(remote);
  return remote;
}

describe("the environment of a remote command", () => {
  it(
    "never prompts: the user's ssh command is kept " +
      "(GIT_SSH_COMMAND, else core.sshCommand, else GIT_SSH) in batch mode",
    () => {
      expect(noPromptEnv({}, null)).toEqual({
        GIT_TERMINAL_PROMPT: "0",
        GCM_INTERACTIVE: "never",
        GIT_SSH_COMMAND: "ssh -o BatchMode=yes",
      });
      const ssh = (env: Record<string, string>, configured: string | null) =>
        noPromptEnv(env, configured).GIT_SSH_COMMAND;
      expect(ssh({ GIT_SSH_COMMAND: "ssh -i ~/.ssh/deploy", GIT_SSH: "/x" }, "ssh -p 2222")).toBe(
        "ssh -i ~/.ssh/deploy -o BatchMode=yes",
      );
      expect(ssh({ GIT_SSH: "/x" }, "ssh -p 2222")).toBe("ssh -p 2222 -o BatchMode=yes");
      expect(ssh({ GIT_SSH: "/opt/it's ssh" }, null)).toBe(`'/opt/it'\\''s ssh' -o BatchMode=yes`);
      // PuTTY's plink knows no -o: its batch mode is -batch
      expect(batchSshCommand("plink.exe -P 2222")).toBe("plink.exe -P 2222 -batch");
      expect(batchSshCommand("'C:/Program Files/TortoiseGit/bin/TortoisePlink.exe'")).toMatch(/ -batch$/);
    },
  );

  it("has a limit per purpose, which STATE_FLOW_REMOTE_TIMEOUT_MS or an explicit value replaces", () => {
    expect([remoteTimeoutMs("ask", {}), remoteTimeoutMs("push", {})]).toEqual([
      REMOTE_TIMEOUT_MS.ask,
      REMOTE_TIMEOUT_MS.push,
    ]);
    expect(remoteTimeoutMs("push", { STATE_FLOW_REMOTE_TIMEOUT_MS: "1500" })).toBe(1500);
    expect(remoteTimeoutMs("ask", { STATE_FLOW_REMOTE_TIMEOUT_MS: "soon" }), "not a number").toBe(
      REMOTE_TIMEOUT_MS.ask,
    );
    expect(remoteTimeoutMs("ask", { STATE_FLOW_REMOTE_TIMEOUT_MS: "1500" }, 200)).toBe(200);
  });
});

describe("a remote that never answers", () => {
  it("is stopped at the limit with a failure that names it and what to check; ssh is killed with git", async () => {
    const ssh = blocking();
    const { runner } = repository(BLOCKED_URL, { GIT_SSH_COMMAND: ssh.command });
    const error = await execRemote(runner, ["ls-remote", "origin", "refs/heads/main"], {
      purpose: "ask",
      timeoutMs: 1500,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RemoteTimeoutError);
    expect((error as Error).message).toMatch(
      /the remote origin did not answer within 1\.5 s, so git ls-remote was stopped/,
    );
    expect((error as Error).message).toMatch(/GIT_TERMINAL_PROMPT=0 git ls-remote origin/);
    const [contact] = ssh.contacts();
    expect(contact, "git reached the remote's ssh command").toBeDefined();
    expect(contact).toMatchObject({ terminalPrompt: "0", gcmInteractive: "never" });
    expect(contact!.args).toMatch(/^-o BatchMode=yes /);
    await until(() => !alive(contact!.pid), "the blocked ssh to be killed with git's process group");
  });

  it("keeps core.sshCommand in batch mode, and an abort (shutdown) kills the question while it blocks", async () => {
    const ssh = blocking();
    const { dir, env, runner } = repository(BLOCKED_URL);
    git(dir, env, "config", "core.sshCommand", ssh.command);
    const abort = new AbortController();
    const asked = execRemote(runner, ["ls-remote", "origin"], { purpose: "ask", signal: abort.signal });
    const settled = asked.catch((e: unknown) => e);
    await until(() => ssh.contacts().length === 1, "the remote to be contacted");
    const [contact] = ssh.contacts();
    expect(contact!.args).toMatch(/^-o BatchMode=yes /);
    expect(alive(contact!.pid), "the remote blocks: no answer, no limit reached").toBe(true);
    abort.abort();
    const error = await settled;
    expect(error).toBeInstanceOf(GitCommandError);
    expect(error).not.toBeInstanceOf(RemoteTimeoutError);
    expect((error as GitCommandError).stderr).toMatch(/^aborted/);
    await until(() => !alive(contact!.pid), "the aborted ssh to be killed");
  });
});

describe("a question that outlives its process", () => {
  it.runIf(findWatchdog(process.env.PATH) !== null)(
    "is killed by its watchdog (coreutils timeout) when the process that asked was killed outright",
    async () => {
      const ssh = blocking();
      const { dir, env } = repository(BLOCKED_URL, { GIT_SSH_COMMAND: ssh.command });
      // A separate node process asks with a 1 s limit, then dies by SIGKILL: no timer, no exit hook.
      const script = join(temps.make("sf-asker-"), "ask.ts");
      const source = (file: string) => JSON.stringify(join(import.meta.dirname, "../../../storage/git", file));
      writeFileSync(
        script,
        `import { GitRunner, findGitExecutable } from ${source("git-runner.ts")};\n` +
          `import { execRemote } from ${source("remote-process.ts")};\n` +
          `const env = JSON.parse(process.env.ASK_ENV);\n` +
          `const runner = new GitRunner({ cwd: ${JSON.stringify(dir)}, env, binary: findGitExecutable(env) });\n` +
          `await execRemote(runner, ["ls-remote", "origin"], { purpose: "ask", timeoutMs: 1000 }).catch(() => {});\n`,
      );
      const asker = spawn(process.execPath, ["--experimental-strip-types", "--no-warnings", script], {
        env: {
          ...env,
          GIT_SSH_COMMAND: ssh.command,
          ASK_ENV: JSON.stringify({ ...env, GIT_SSH_COMMAND: ssh.command }),
        },
        stdio: "ignore",
      });
      children.push(asker);
      await until(() => ssh.contacts().length === 1, "the remote to be contacted");
      asker.kill("SIGKILL");
      await new Promise((done) => asker.once("exit", done));
      const [contact] = ssh.contacts();
      await until(() => !alive(contact!.pid), "the watchdog to kill the orphaned question");
    },
  );
});

describe("a remote that wants credentials", () => {
  it("fails at once instead of asking on the terminal (GIT_TERMINAL_PROMPT=0, no askpass)", async () => {
    let requests = 0;
    const server = createServer((_request, response) => {
      requests++;
      response.writeHead(401, { "WWW-Authenticate": 'Basic realm="state-flow-test"' }).end();
    });
    servers.push(server);
    await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
    const { port } = server.address() as AddressInfo;
    const { runner } = repository(`http://127.0.0.1:${port}/state.git`);
    // A limit no test reaches: the failure must come from git refusing to prompt, not from the limit.
    const error = await execRemote(runner, ["ls-remote", "origin"], { purpose: "ask", timeoutMs: 600_000 }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(GitCommandError);
    expect(error).not.toBeInstanceOf(RemoteTimeoutError);
    expect((error as GitCommandError).exitCode).toBe(128);
    expect((error as GitCommandError).stderr).toMatch(/could not read Username .*terminal prompts disabled/);
    expect(requests, "the server was asked and refused").toBeGreaterThan(0);
  });
});
