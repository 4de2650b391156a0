// The corruption matrix of issue 25: every scope × file × damage, in both store kinds, through
// every read that serves state (a new session's start, a restore of the branch's pointer, the
// open session's next commit). A read either names the damage or serves the accepted state; it
// never serves an older or emptier one. STATE_FLOW_MATRIX=1 prints the matrix.

import { cpSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { cwdKey, scopeFiles } from "../../storage/layout.ts";
import { openStore } from "../../storage/open-store.ts";
import { StateStore, type BranchState, type SessionIdentity } from "../../storage/state-store.ts";
import { readTemporalState } from "../../storage/core/temporal.ts";
import { SCOPES, type ScopeName } from "../../storage/core/scope-state.ts";
import { stableStringify } from "../support/oracle.ts";
import { TempDirs, git, gitTestEnv } from "../support/store-fixtures.ts";

const temp = new TempDirs();
afterAll(() => temp.cleanup());

type Kind = "git" | "file";
type Member = "checkpoint" | "patches" | "meta";
type Damage = "truncated" | "emptied" | "reordered" | "swapped" | "deleted";
type Outcome = "named" | "fallback" | "intact" | "silent";

const MEMBERS: Member[] = ["checkpoint", "patches", "meta"];
const DAMAGES: Damage[] = ["truncated", "emptied", "reordered", "swapped", "deleted"];

function identity(sessionId: string, cwd = "/work/project"): SessionIdentity {
  return { cwd, cwdKey: cwdKey(cwd), sessionId, sessionKey: `2026-12-03T10-00-00-000Z_${sessionId}` };
}

async function open(kind: Kind, root: string, id: SessionIdentity): Promise<StateStore> {
  const globalConfig = join(temp.make("sf-gitcfg-"), "gitconfig");
  writeFileSync(globalConfig, "");
  const env = kind === "git" ? gitTestEnv(globalConfig) : { ...process.env, PATH: temp.make("sf-nogit-") };
  return new StateStore(await openStore({ root, env, initGit: kind === "git" }), id);
}

const A = identity("a");

/**
 * Ten transitions over every scope (the checkpoints fold from the eighth on); the bytes of every
 * file after the ninth are kept as "older". Built once per kind and copied for each damage.
 */
async function populated(kind: Kind) {
  const root = temp.make("sf-integrity-");
  const store = await open(kind, root, A);
  let runtime = await store.start(null, "off");
  let older = new Map<string, Buffer>();
  for (let i = 1; i <= 10; i++) {
    const patch = { global: { working: { g: i } }, cwd: { contract: { c: i } }, session: { working: { s: i } } };
    runtime = (await store.commit(runtime, patch, `t${i}`)).runtime;
    if (i === 9) older = filesOf(root);
  }
  return { root, runtime, older };
}

const templates = new Map<Kind, Awaited<ReturnType<typeof populated>>>();

/** A fresh copy of the kind's populated store (with its .git), and an open store on it. */
async function copyOf(kind: Kind) {
  if (!templates.has(kind)) templates.set(kind, await populated(kind));
  const template = templates.get(kind)!;
  const root = join(temp.make("sf-integrity-copy-"), "store");
  cpSync(template.root, root, { recursive: true });
  return { ...template, root, store: await open(kind, root, A) };
}

function pathOf(scope: ScopeName, member: Member): string {
  return scopeFiles(scope, A)[member];
}

function filesOf(root: string): Map<string, Buffer> {
  const files = new Map<string, Buffer>();
  for (const scope of SCOPES)
    for (const member of MEMBERS) {
      const path = pathOf(scope, member);
      files.set(path, readFileSync(join(root, path)));
    }
  return files;
}

function damage(root: string, path: string, how: Damage, older: Map<string, Buffer>): void {
  const full = join(root, path);
  const bytes = readFileSync(full);
  const text = bytes.toString("utf8");
  switch (how) {
    case "truncated": {
      const lines = text.split("\n").filter((l) => l.length > 0);
      const cut = path.endsWith(".jsonl") ? `${lines.slice(0, -1).join("\n")}\n` : text.slice(0, text.length >> 1);
      writeFileSync(full, cut);
      return;
    }
    case "emptied":
      writeFileSync(full, "");
      return;
    case "reordered": {
      if (path.endsWith(".jsonl")) {
        const lines = text.split("\n").filter((l) => l.length > 0);
        const [last, before] = [lines.pop()!, lines.pop()!];
        writeFileSync(full, `${[...lines, last, before].join("\n")}\n`);
      } else {
        const reversed = Object.fromEntries(Object.entries(JSON.parse(text) as object).reverse());
        writeFileSync(full, `${JSON.stringify(reversed, null, 2)}\n`);
      }
      return;
    }
    case "swapped":
      writeFileSync(full, older.get(path)!);
      return;
    case "deleted":
      rmSync(full);
      return;
  }
}

/** The damaged scope's accepted state, as the read should serve it (the commit adds its own patch). */
function expected(truth: BranchState, scope: ScopeName, committed: boolean): unknown {
  const state = readTemporalState(truth.view, 0, scope).state;
  return committed && scope === "session" ? { ...state, working: { ...state.working, next: true } } : state;
}

/** What one read did: threw an error naming a file of the damaged scope, served the accepted state, or neither. */
async function outcome(read: () => Promise<BranchState>, accepted: unknown, scope: ScopeName): Promise<Outcome> {
  let runtime: BranchState;
  try {
    runtime = await read();
  } catch (error) {
    const text = String((error as Error).message);
    const names = MEMBERS.some((member) => text.includes(pathOf(scope, member)));
    if (names) return "named";
    // A restore that cannot prove the branch's pointer falls back through the branch (the Pi adapter).
    if ((error as { code?: string }).code === "pointer-unavailable") return "fallback";
    if (process.env.STATE_FLOW_MATRIX) console.log(`unnamed: ${text}`);
    return "silent";
  }
  const served = readTemporalState(runtime.view, 0, scope).state;
  return stableStringify(served) === stableStringify(accepted) ? "intact" : "silent";
}

const matrix: string[] = [];
afterAll(() => {
  if (process.env.STATE_FLOW_MATRIX)
    console.log(["kind scope member damage: start restore commit", ...matrix].join("\n"));
});

describe.each(["file", "git"] as const)("corruption matrix (%s)", (kind) => {
  for (const scope of SCOPES) {
    for (const member of MEMBERS) {
      it(`${scope} ${member}: every damage is named or harmless, never an older state`, async () => {
        for (const how of DAMAGES) {
          const cells: Outcome[] = [];
          for (const read of ["start", "restore", "commit"] as const) {
            if (read === "start" && scope === "session") continue; // a new session never reads another's layer
            const { root, store, runtime, older } = await copyOf(kind);
            damage(root, pathOf(scope, member), how, older);
            const reads = {
              start: async () => (await open(kind, root, identity("b"))).start(null, "off"),
              restore: async () => (await open(kind, root, A)).loadPointer(runtime.pointer),
              commit: async () =>
                (await store.commit(runtime, { session: { working: { next: true } } }, "after damage")).runtime,
            };
            const result = await outcome(reads[read], expected(runtime, scope, read === "commit"), scope);
            cells.push(result);
            expect(result, `${kind} ${scope} ${member} ${how} via ${read}`).not.toBe("silent");
          }
          matrix.push(`${kind} ${scope} ${member} ${how}: ${cells.join(" ")}`);
        }
      });
    }
  }
});

function withoutStreamRecord(root: string, path: string): void {
  const meta = JSON.parse(readFileSync(join(root, path), "utf8")) as Record<string, unknown>;
  delete meta.stream;
  writeFileSync(join(root, path), `${JSON.stringify(meta, null, 2)}\n`);
}

function globalState(runtime: BranchState): unknown {
  return readTemporalState(runtime.view, 0, "global").state.working;
}

describe("doing what a refusal says works", () => {
  const patches = pathOf("global", "patches");
  const meta = pathOf("global", "meta");

  it("file: a cut tail → delete the stream member → it reads what its files hold and is recorded again", async () => {
    const { root, older } = await copyOf("file");
    damage(root, patches, "truncated", older);
    const error = await (await open("file", root, identity("b"))).start(null, "off").catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "stream-mismatch", file: patches });
    expect(String((error as Error).message)).toContain(`${join(root, patches)} holds 6 records ending at step 9`);
    expect(String((error as Error).message)).toContain(`delete the "stream" member of ${join(root, meta)}`);
    withoutStreamRecord(root, meta);
    const b = await (await open("file", root, identity("b"))).start(null, "off");
    expect(globalState(b)).toEqual({ g: 9 });
    expect(JSON.parse(readFileSync(join(root, meta), "utf8")).stream).toMatchObject({ records: 6 });
    const c = await (await open("file", root, identity("c"))).start(null, "off");
    expect(globalState(c)).toEqual({ g: 9 });
  });

  it("file: a cut tail → put back the written bytes → the accepted state reads again", async () => {
    const { root, older } = await copyOf("file");
    const written = readFileSync(join(root, patches));
    damage(root, patches, "emptied", older);
    await expect((await open("file", root, identity("b"))).start(null, "off")).rejects.toMatchObject({
      code: "stream-mismatch",
    });
    writeFileSync(join(root, patches), written);
    expect(globalState(await (await open("file", root, identity("b"))).start(null, "off"))).toEqual({ g: 10 });
  });

  it("file: an unreadable meta.json → delete it → the scope reads and its meta.json is written again", async () => {
    const { root, older } = await copyOf("file");
    damage(root, meta, "truncated", older);
    const error = await (await open("file", root, identity("b"))).start(null, "off").catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "invalid-scope-meta", file: meta });
    expect(String((error as Error).message)).toContain(`or delete ${join(root, meta)}`);
    rmSync(join(root, meta));
    expect(globalState(await (await open("file", root, identity("b"))).start(null, "off"))).toEqual({ g: 10 });
    expect(JSON.parse(readFileSync(join(root, meta), "utf8")).stream).toMatchObject({ records: 7 });
  });

  it("file: a damaged session file → the restore names it → put back its bytes → it restores", async () => {
    const { root, runtime, older } = await copyOf("file");
    const path = pathOf("session", "patches");
    const written = readFileSync(join(root, path));
    damage(root, path, "truncated", older);
    const error = await (await open("file", root, A)).loadPointer(runtime.pointer).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "pointer-unavailable" });
    expect(String((error as Error).message)).toContain(`${join(root, path)} holds 6 records ending at step 9`);
    writeFileSync(join(root, path), written);
    const restored = await (await open("file", root, A)).loadPointer(runtime.pointer);
    expect(readTemporalState(restored.view, 0, "session").state.working).toEqual({ s: 10 });
  });

  it("git: a damaged tail someone committed → check out what State Flow committed → it reads again", async () => {
    const { root } = await copyOf("git");
    const globalConfig = join(temp.make("sf-gitcfg-"), "gitconfig");
    writeFileSync(globalConfig, "");
    const env = gitTestEnv(globalConfig);
    damage(root, patches, "truncated", new Map());
    git(root, env, "commit", "-qam", "a sync client cut the tail");
    const error = await (await open("git", root, identity("b"))).start(null, "off").catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "stream-mismatch", file: patches });
    expect(String((error as Error).message)).toContain(`git -C ${root} log --oneline -- ${meta}`);
    const writer = git(root, env, "log", "--format=%H", "-1", "--", meta).trim();
    git(root, env, "checkout", writer, "--", patches, meta);
    git(root, env, "commit", "-qam", "put back what State Flow wrote");
    expect(globalState(await (await open("git", root, identity("b"))).start(null, "off"))).toEqual({ g: 10 });
  });

  it.each(["file", "git"] as const)(
    "%s: files an earlier version wrote (no record) load and gain one on the next write",
    async (kind) => {
      const { root, store, runtime } = await copyOf(kind);
      for (const scope of ["global", "cwd"] as const) withoutStreamRecord(root, pathOf(scope, "meta"));
      if (kind === "git") {
        const globalConfig = join(temp.make("sf-gitcfg-"), "gitconfig");
        writeFileSync(globalConfig, "");
        git(root, gitTestEnv(globalConfig), "commit", "-qam", "files of an earlier version");
      }
      const b = await (await open(kind, root, identity("b"))).start(null, "off");
      expect(globalState(b)).toEqual({ g: 10 });
      for (const scope of ["global", "cwd"] as const) {
        expect(JSON.parse(readFileSync(join(root, pathOf(scope, "meta")), "utf8")).stream).toMatchObject({
          records: 7,
        });
      }
      const next = await store.commit(runtime, { global: { working: { g: 11 } } }, "after the upgrade");
      expect(globalState(next.runtime)).toEqual({ g: 11 });
    },
  );
});
