// A real bare remote behind a gate the test controls: the store's remote URL is reached through
// an ssh command (core.sshCommand) that answers OpenSSH's variant probe (`-G`) like ssh and then,
// per connection, waits for a ticket of its kind — "ask" (`git ls-remote`: upload-pack) or "push"
// (receive-pack) — that says whether to refuse the connection (the remote is unreachable) or to
// run the git command it was asked for on the bare repository (real `git receive-pack` /
// `git upload-pack`, so pushes and questions really happen). Tickets fix the order of remote
// results that would otherwise race the session's next step; `open` lets every connection through
// at once (setup sessions). State Flow's own abort kills a connection still waiting.
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { alive } from "./blocking-remote.ts";

export type RemoteKind = "ask" | "push";
export type Admission = "ok" | "refuse";

export interface GatedRemote {
  /** The bare repository. */
  readonly path: string;
  /** The URL the store's remote names (scp-like, so git reaches it through `command`). */
  readonly url: string;
  /** The ssh command to configure as core.sshCommand. */
  readonly command: string;
  /** Lets the next waiting (or next arriving) connection of `kind` through, or refuses it. */
  ticket(kind: RemoteKind, admission: Admission): void;
  /** Every connection is admitted (or refused) at once until `close`. */
  open(admission?: Admission): void;
  close(): void;
  /** Whether a connection of `kind` is open (waiting for its ticket or running). */
  connected(kind: RemoteKind): boolean;
  /** Whether the remote has the commit `revision`. */
  has(revision: string): boolean;
  /** Kills every connection still waiting (test cleanup). */
  killLeft(): void;
}

export function gatedRemote(dir: string, env: NodeJS.ProcessEnv): GatedRemote {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, "remote.git");
  execFileSync("git", ["init", "-q", "--bare", path], { env });
  const at = (name: string) => join(dir, name);
  const command = at("gated-ssh");
  writeFileSync(at("contacts"), "");
  writeFileSync(
    command,
    "#!/bin/sh\n" +
      'for a in "$@"; do [ "$a" = -G ] && exit 0; last="$a"; done\n' +
      'kind=ask; case "$last" in *receive-pack*) kind=push;; esac\n' +
      `cd '${dir}' || exit 255\n` +
      'printf \'%s %s\\n\' "$$" "$kind" >> contacts\n' +
      "mode=\n" +
      'while [ -z "$mode" ]; do\n' +
      "  if [ -e open ]; then mode=$(cat open)\n" +
      '  elif mv "ticket-$kind" "taken-$$" 2>/dev/null; then mode=$(cat "taken-$$"); rm -f "taken-$$"\n' +
      "  else sleep 0.02; fi\n" +
      "done\n" +
      'if [ "$mode" = refuse ]; then echo "ssh: connect to host gate.invalid: Connection refused" >&2; exit 255; fi\n' +
      // `git-receive-pack '/path'` runs as `git receive-pack '/path'` (the dashed forms need git's exec path)
      'exec sh -c "git ${last#git-}"\n',
    { mode: 0o755 },
  );
  const contacts = () =>
    readFileSync(at("contacts"), "utf8")
      .split("\n")
      .filter((line) => line.length > 0)
      .map((line) => ({ pid: Number(line.split(" ")[0]), kind: line.split(" ")[1] }));
  const write = (name: string, text: string) => {
    writeFileSync(at(`${name}.tmp`), text);
    renameSync(at(`${name}.tmp`), at(name));
  };
  return {
    path,
    url: `gate.invalid:${path}`,
    command,
    ticket: (kind, admission) => write(`ticket-${kind}`, admission),
    open: (admission = "ok") => write("open", admission),
    close: () => rmSync(at("open"), { force: true }),
    connected: (kind) => contacts().some((c) => c.kind === kind && alive(c.pid)),
    has: (revision) => {
      try {
        execFileSync("git", ["cat-file", "-e", `${revision}^{commit}`], { cwd: path, env, stdio: "ignore" });
        return true;
      } catch {
        return false;
      }
    },
    killLeft: () => {
      for (const { pid } of contacts()) if (alive(pid)) process.kill(pid, "SIGKILL");
    },
  };
}
