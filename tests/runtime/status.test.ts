import { describe, expect, it } from "vitest";
import { LARGE_STATE_TOKENS, compactStatus, renderStatus, type StatusInput } from "../../runtime/status.ts";
import { parsePatchSet, stageCohort } from "../../storage/core/cohort.ts";
import type { BranchState } from "../../storage/state-store.ts";
import { originateView } from "../../storage/core/temporal.ts";

function runtime(global?: Record<string, unknown>): BranchState {
  let view = originateView("L");
  view = stageCohort(
    view,
    parsePatchSet({
      cwd: { artifacts: { "/a.md": { description: "a" } } },
      session: { working: { x: 1 } },
      ...(global ? { global } : {}),
    }).patches,
    "T1",
  ).view;
  return {
    identity: { cwd: "/w", cwdKey: "--w--", sessionId: "u", sessionKey: "2026_u" },
    pointer: { revision: "c".repeat(40) },
    view,
    meta: {
      version: 1,
      kind: "session",
      identity: { cwd: "/w", cwdKey: "--w--", sessionId: "u", sessionKey: "2026_u" },
      lineage: view.lineage,
      counters: { transitions: 1, runs: 0 },
      revision: "self",
      publication: { intent: "unconfirmed" },
      artifacts: {},
    },
    config: { version: 1, enabled: true, remotePublication: "turn-end" },
    basis: { pointer: null, hashes: new Map(), files: new Map() },
  };
}

const base: StatusInput = {
  episode: "active.steady",
  toolsActive: true,
  missingTools: [],
  storeRoot: "/s",
  storeKind: "git",
  runtime: null,
  unavailable: null,
  publication: "turn-end",
  pendingTarget: null,
  invalidations: { unavailable: "Knowledge discovery has not completed for this run" },
};

describe("status", () => {
  it("reports the tools' real state: active, off, or wanted but left out", () => {
    expect(renderStatus(base)).toContain("episode: active.steady (tools active)");
    expect(renderStatus({ ...base, toolsActive: false })).toContain("episode: active.steady (tools off)");
    expect(renderStatus({ ...base, missingTools: ["patch_state", "read_state"] })).toContain(
      "episode: active.steady (tools NOT active: patch_state, read_state left out by a tool allowlist or another " +
        "extension)",
    );
  });

  it("stale artifacts: the plan's count by reason and the first paths, none in words, or why unavailable", () => {
    const text = (invalidations: StatusInput["invalidations"]) =>
      renderStatus({ ...base, runtime: runtime(), invalidations })
        .split("\n")
        .find((l) => l.includes("stale"));
    expect(text({ unavailable: "discovery failed: EACCES" })).toBe(
      "  stale artifacts: unavailable (discovery failed: EACCES)",
    );
    expect(text([])).toBe("  stale artifacts: none (no discovered Knowledge source is new or known to be stale)");
    const many = ["a", "b", "c", "d", "e", "f"].map((p, i) => ({
      path: `/k/${p}.md`,
      reason: i % 2 ? "changed" : "new",
    }));
    expect(text(many)).toBe(
      "  stale artifacts: 6 (3 new, 3 changed): /k/a.md (new), /k/b.md (changed), /k/c.md (new), /k/d.md (changed), " +
        "/k/e.md (new), +1 more",
    );
  });

  it("memory: the bearing scopes, and promotion counts with bounded details; invalid records never count", () => {
    const text = renderStatus({
      ...base,
      runtime: runtime({
        working: {
          memory_promotions: {
            a: { status: "failed", owner: "n", error: "offline" },
            b: { status: "accepted", owner: "n" },
          },
        },
      }),
    });
    expect(text).toContain("memory: owned by State Flow; memory-bearing scopes: global, session");
    expect(text).toContain(
      "promotions: 1 failed, 1 invalid (a failed: offline; b invalid: an accepted promotion needs the exact " +
        "destination pointer and revision (non-empty strings))",
    );
    expect(renderStatus({ ...base, runtime: runtime() })).toContain("promotions: none");
  });

  it("says state[0]'s size per scope and per request; past the mark, one line suggests curation", () => {
    const small = renderStatus({ ...base, runtime: runtime() });
    const sizes = small.split("\n").find((l) => l.includes("state[0] size"))!;
    const [, g, c, se, eff] = /global (\d+), cwd (\d+), session (\d+); effective ([\d,]+), added to every/.exec(sizes)!;
    expect([g, c, se].map(Number).every((n) => n > 0)).toBe(true);
    expect(Number(eff)).toBeGreaterThan(Number(se));
    expect(small).not.toContain("notice:");
    const big = renderStatus({ ...base, runtime: runtime({ working: { notes: "n".repeat(4 * LARGE_STATE_TOKENS) } }) });
    expect(big).toMatch(/state\[0\] size[^\n]*global 8,0\d\d,[^\n]*effective 8,\d\d\d, added to every model request/);
    expect(big).toContain("notice: state[0] is past 8,000 tokens; consider curating it (/skill:state-flow-memory)");
    expect(big.split("\n").filter((l) => l.includes("notice:"))).toHaveLength(1);
  });

  it("compact status is state-flow #<step>", () => {
    expect(compactStatus(7)).toBe("state-flow #7");
    expect(compactStatus(null)).toBe("state-flow");
  });

  it("separates runtime config/meta from semantic materialization", () => {
    const text = renderStatus({ ...base, runtime: runtime(), pendingTarget: "d".repeat(40) });
    expect(text).toMatch(
      new RegExp(
        /Runtime \(config and meta\)[\s\S]*enabled: yes[\s\S]*scope keys: cwd --w-- {4}session 2026_u/.source +
          /[\s\S]*head: step 1 \(T1\)[\s\S]*Semantic materialization/.source,
      ),
    );
    expect(text).toMatch(/publication: turn-end \(pending d{40}\)/);
    expect(text).toMatch(/hot offsets: 0–1 \(2 available\)/);
    expect(text).toMatch(/retained tails: global 0, cwd 1, session 1/);
    expect(text).toMatch(/artifacts: global 0, cwd 1, session 0, effective 1/);
  });

  it("failed inspection is unavailable, never a clean zero", () => {
    const text = renderStatus({ ...base, runtime: runtime(), unavailable: "revision abc is unproven" });
    expect(text).toMatch(/runtime: unavailable — revision abc is unproven/);
    expect(text).not.toMatch(/artifacts: global 0/);
    expect(text).toMatch(/Semantic materialization\n {2}unavailable/);
  });

  it("no runtime says how to enable", () => {
    expect(renderStatus({ ...base, episode: "off", toolsActive: false })).toMatch(
      /runtime: none on this branch .*\/state-flow-start/,
    );
  });
});
