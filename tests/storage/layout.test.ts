import { describe, expect, it } from "vitest";
import {
  assertIdentityOwns,
  cohortPaths,
  cwdIdentity,
  cwdKey,
  defaultStoreRoot,
  scopeFiles,
  scopeOfPath,
  sessionIdOfKey,
  sessionIdentity,
  sessionKeyFromFile,
  sessionKeyFromHeader,
} from "../../storage/layout.ts";
import { StoreError } from "../../storage/store-error.ts";

const keys = {
  cwdKey: "--home-llb-Repos-deos--",
  sessionKey: "2026-09-07T20-01-08-993Z_0198f1c2-aaaa-7bbb-8ccc-123456789abc",
};

describe("layout", () => {
  it("defaults the store root to <agentDir>/state-flow", () => {
    expect(defaultStoreRoot("/home/u/.pi/agent")).toBe("/home/u/.pi/agent/state-flow");
  });

  it("names cwd keys exactly as Pi names its session folders", () => {
    expect(cwdKey("/home/llb/Repos/deos")).toBe("--home-llb-Repos-deos--");
    expect(cwdKey("/")).toBe("----");
    expect(cwdKey("/a:b/c\\d")).toBe("--a-b-c-d--");
    expect(cwdKey("/home/llb/Repos/deos/")).toBe("--home-llb-Repos-deos--");
    expect(cwdKey("/a-b")).toBe(cwdKey("/a/b")); // a collision the identity record must catch
  });

  it("matches Pi's own session directory function", async () => {
    const { SessionManager } = await import("@earendil-works/pi-coding-agent");
    const { mkdtempSync, rmSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const { basename, dirname, join } = await import("node:path");
    const agentDir = mkdtempSync(join(tmpdir(), "sf-layout-"));
    const previous = process.env.PI_CODING_AGENT_DIR;
    process.env.PI_CODING_AGENT_DIR = agentDir;
    try {
      const cwd = join(agentDir, "work:dir", "project");
      const manager = SessionManager.create(cwd);
      const file = manager.getSessionFile();
      expect(file).toBeDefined();
      expect(basename(dirname(file!))).toBe(cwdKey(cwd));
      expect(sessionKeyFromFile(file!)).toBe(basename(file!, ".jsonl"));
      const header = manager.getHeader();
      expect(header).toBeTruthy();
      expect(sessionKeyFromHeader({ id: header!.id, timestamp: header!.timestamp })).toBe(basename(file!, ".jsonl"));
      const memory = SessionManager.inMemory(cwd);
      const memHeader = memory.getHeader()!;
      expect(sessionKeyFromHeader(memHeader)).toBe(
        `${memHeader.timestamp.replace(/[:.]/g, "-")}_${memory.getSessionId()}`,
      );
    } finally {
      if (previous === undefined) delete process.env.PI_CODING_AGENT_DIR;
      else process.env.PI_CODING_AGENT_DIR = previous;
      rmSync(agentDir, { recursive: true, force: true });
    }
  });

  it("derives session keys from files and headers", () => {
    expect(sessionKeyFromFile(`/x/--a--/${keys.sessionKey}.jsonl`)).toBe(keys.sessionKey);
    expect(
      sessionKeyFromHeader({ id: "0198f1c2-aaaa-7bbb-8ccc-123456789abc", timestamp: "2026-09-07T20:01:08.993Z" }),
    ).toBe(keys.sessionKey);
    expect(sessionIdOfKey(keys.sessionKey)).toBe("0198f1c2-aaaa-7bbb-8ccc-123456789abc");
    expect(() => sessionKeyFromHeader({ id: "a/b", timestamp: "t" })).toThrow(StoreError);
    expect(() => sessionKeyFromHeader({ id: "", timestamp: "t" })).toThrow(/id/);
  });

  it("lays out scope files", () => {
    expect(scopeFiles("global", keys)).toEqual({
      scope: "global",
      dir: "",
      checkpoint: "checkpoint.json",
      patches: "patches.jsonl",
      meta: "meta.json",
    });
    expect(scopeFiles("cwd", keys).patches).toBe(`${keys.cwdKey}/patches.jsonl`);
    expect(scopeFiles("session", keys).config).toBe(`${keys.cwdKey}/${keys.sessionKey}/config.json`);
    const all = cohortPaths(keys);
    expect(all).toHaveLength(10);
    expect([...all].sort()).toEqual(all);
    expect(all.map(scopeOfPath)).toContain("session");
    expect(() => scopeFiles("cwd", { cwdKey: "..", sessionKey: "s" })).toThrow(
      expect.objectContaining({ code: "invalid-key" }),
    );
    expect(() => scopeFiles("session", { cwdKey: "--a--", sessionKey: "x/y" })).toThrow(
      expect.objectContaining({ code: "invalid-key" }),
    );
  });

  it("rejects a foreign identity owning a key", () => {
    const file = `${cwdKey("/a/b")}/meta.json`;
    expect(() => assertIdentityOwns({ file, stored: undefined, claimed: cwdIdentity("/a/b") })).not.toThrow();
    expect(() =>
      assertIdentityOwns({ file, stored: cwdIdentity("/a/b"), claimed: cwdIdentity("/a/b/") }),
    ).not.toThrow();
    expect(() => assertIdentityOwns({ file, stored: cwdIdentity("/a-b"), claimed: cwdIdentity("/a/b") })).toThrow(
      expect.objectContaining({
        code: "foreign-identity",
        file,
        message: expect.stringContaining("owned by cwd /a-b"),
      }),
    );
    const sfile = `${keys.cwdKey}/${keys.sessionKey}/meta.json`;
    expect(() =>
      assertIdentityOwns({ file: sfile, stored: sessionIdentity("u1", "/x"), claimed: sessionIdentity("u2", "/x") }),
    ).toThrow(expect.objectContaining({ code: "foreign-identity" }));
  });
});

describe("isScopeFilePath", () => {
  it("names exactly the files the layout keeps for the three scopes", async () => {
    const { isScopeFilePath } = await import("../../storage/layout.ts");
    for (const path of ["checkpoint.json", "meta.json", "--a--/patches.jsonl", "--a--/s1/config.json"]) {
      expect(isScopeFilePath(path), path).toBe(true);
    }
    for (const path of ["config.json", "--a--/config.json", "notes/checkpoint.json", "--a--/s/x/meta.json", "a.md"]) {
      expect(isScopeFilePath(path), path).toBe(false);
    }
  });
});
