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
  mode: "active",
  remote: { status: "local-only", lastPushed: null },
  pending: null,
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
    expect(text).toContain("memory-bearing scopes: global, session");
    expect(text).toContain(
      "promotions: 1 failed, 1 invalid (a failed: offline; b invalid: an accepted promotion needs the exact " +
        "destination pointer and revision (non-empty strings))",
    );
    expect(renderStatus({ ...base, runtime: runtime() })).toContain("promotions: none");
  });

  it("owner mode and fallback activation follow the records and the state, never a constant", () => {
    const line = (text: string, label: string) => text.split("\n").find((l) => l.startsWith(`  ${label}: `));
    const alone = renderStatus({ ...base, runtime: runtime() });
    expect(line(alone, "owner mode")).toBe(
      "  owner mode: State Flow alone — no accepted promotion; every body is held here",
    );
    expect(line(alone, "fallback")).toBe("  fallback: not active — no promotion failed or is of unknown outcome");
    const pending = { p0: { status: "pending", owner: "wiki", body: "/session/working/x" } };
    const stillAlone = renderStatus({ ...base, runtime: runtime({ working: { memory_promotions: pending } }) });
    expect(line(stillAlone, "owner mode"), "a pending promotion holds no copy yet").toBe(line(alone, "owner mode"));
    expect(line(stillAlone, "fallback")).toBe(line(alone, "fallback"));
    const records = {
      ...pending,
      p1: { status: "accepted", owner: "notes", pointer: "n://1", revision: "r1" },
      p2: { status: "accepted", owner: "archive", pointer: "a://2", revision: "r2" },
      p3: { status: "failed", owner: "notes", body: "/session/working/x", error: "offline" },
      p4: { status: "unknown", owner: "wiki", body: "/global/working/plan" },
      p5: { status: "unknown", owner: "wiki" },
    };
    const shared = renderStatus({ ...base, runtime: runtime({ working: { memory_promotions: records } }) });
    expect(line(shared, "owner mode")).toBe(
      "  owner mode: State Flow, with copies held by archive, notes — accepted promotions may have replaced " +
        "their bodies here by pointers",
    );
    expect(line(shared, "fallback")).toBe(
      "  fallback: active for 3 promotion(s) — p3 (failed, notes): State Flow's /session/working/x is in use; " +
        "p4 (unknown, wiki): its named body /global/working/plan is MISSING from state; " +
        "p5 (unknown, wiki): its record names no body",
    );
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

  it("the footer's detail is #<step> (the adapter draws the accent state-flow before it)", () => {
    expect(compactStatus(7)).toBe("#7");
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

describe("status summary (plain words first)", () => {
  const summary = (input: Partial<StatusInput>) => {
    const text = renderStatus({ ...base, runtime: runtime(), ...input });
    return text.slice(0, text.indexOf("\n\nDetails")).split("\n").slice(2);
  };

  it("says on, migrating, stopped, off or unavailable, with what each means and what to do", () => {
    expect(summary({})[0]).toBe(
      "State Flow: on (step 1) — the model works from the state below; runs leave the transcript",
    );
    expect(summary({ mode: "bootstrapTranscript" })[0]).toMatch(/^State Flow: on, migrating \(step 1\) — /);
    expect(summary({ mode: "passive" })[0]).toMatch(/^State Flow: stopped — .* \/state-flow-start resumes$/);
    expect(summary({ mode: "ordinary", runtime: null })[0]).toMatch(/^State Flow: off — .*\/state-flow-start/);
    expect(summary({ mode: "failedClosed", unavailable: "cohort file:ab is no longer available" })[0]).toBe(
      "State Flow: unavailable — this branch's state could not be proven, so prompts are refused " +
        "(cohort file:ab is no longer available)",
    );
  });

  it("names the store, the remote as it stands (none, pending with its cause, up to date) and the size", () => {
    expect(summary({})).toEqual([
      "State Flow: on (step 1) — the model works from the state below; runs leave the transcript",
      "Store: /s — Git: every accepted change is a commit",
      "Remote: none — commits stay in the store (git -C <store> remote add … to publish them)",
      expect.stringMatching(/^State size: global \d+, cwd \d+, session \d+ tokens — \d+ go with every model request$/),
      "Problems: none found",
    ]);
    const pending = { revision: "e".repeat(40), attempts: 2, lastError: "ssh: connect to host: timed out" };
    const lines = summary({ remote: { status: "pending", lastPushed: null }, pending });
    expect(lines[2]).toBe(
      "Remote: pending — eeeeeeeeeeee is not pushed yet (2 failed: ssh: connect to host: timed out); pushed again " +
        "after the next run (/state-flow-sync tries now)",
    );
    expect(lines.slice(-2)).toEqual([
      "Problems:",
      "  - the remote refused or did not answer: ssh: connect to host: timed out",
    ]);
    // A push at work is said so, not "pushed again after the next run".
    expect(summary({ remote: { status: "pushing", lastPushed: null }, pending })[2]).toBe(
      "Remote: pushing eeeeeeeeeeee now (2 failed: ssh: connect to host: timed out)",
    );
    const pushed = { status: "confirmed" as const, lastPushed: { revision: "f".repeat(40), remote: "origin" } };
    expect(summary({ remote: pushed })[2]).toBe("Remote: origin: up to date (last push ffffffffffff)");
    expect(summary({ storeKind: "file", remote: { status: "file-only", lastPushed: null } }).slice(1, 3)).toEqual([
      "Store: /s — files only (no Git)",
      expect.stringMatching(/^State size: /),
    ]);
  });

  it("a push held behind another machine's changes is told from one the remote did not answer, with the sync", () => {
    const pending = { revision: "e".repeat(40), attempts: 0, lastError: "the remote holds commits this machine lacks" };
    const conflict = { scope: "global", localPaths: ["patches.jsonl"], remotePaths: ["checkpoint.json"] };
    const finding = {
      standing: "diverged" as const,
      remote: "origin",
      local: "a".repeat(40),
      remoteHead: "b".repeat(40),
      fromRemote: [],
      conflicts: [conflict],
      localStartOnly: false,
    };
    const sync = { state: "diverged", finding, open: [conflict], arrival: null, error: null };
    const lines = summary({ remote: { status: "waiting", lastPushed: null }, pending, sync });
    expect(lines[2]).toBe(
      "Remote: waiting — another machine (remote origin) published first; eeeeeeeeeeee is pushed once its changes " +
        "are brought in (see Sync)",
    );
    expect(lines[3]).toBe("Sync: this machine and another machine (remote origin) both changed global:");
    expect(lines).toContain("  - global: this machine changed patches.jsonl; the remote changed checkpoint.json");
    expect(lines).toContain("  /state-flow-sync keep-local   keeps this machine's values (aaaaaaaaaaaa) for global");
    expect(lines.slice(-2)).toEqual([
      "Problems:",
      "  - global changed here and on another machine: choose a side (Sync)",
    ]);
  });

  it("lists the problems it found: tools left out, stale sources", () => {
    const lines = summary({ missingTools: ["patch_state"], invalidations: [{ path: "/k/a.md", reason: "changed" }] });
    expect(lines.slice(-3)).toEqual([
      "Problems:",
      "  - State Flow's tools are not active (patch_state): runs are ordinary Pi",
      "  - 1 Knowledge source(s) changed or new since their artifact was written",
    ]);
  });
});
