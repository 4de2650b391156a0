// A start without a Git identity says so in one notice with the exact commands that set one; running
// either of them as printed (for all repositories, or for the store only) makes the next start work.

import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { harnessFactory, type PiHarness } from "../../support/pi-harness.ts";

const harness = harnessFactory();

async function withoutIdentity(): Promise<PiHarness> {
  const h = await harness();
  for (const key of Object.keys(h.env)) if (/^GIT_(AUTHOR|COMMITTER)_/.test(key)) delete h.env[key];
  h.env.EMAIL = "";
  return h;
}

/** The failed start's single notice, and the two commands it advises. */
async function failedStart(h: PiHarness): Promise<{ global: string; storeOnly: string }> {
  await h.command("/state-flow-start");
  expect(h.accessor.episode()).toBe("off");
  const errors = h.notices.filter((n) => n.level === "error").map((n) => n.message);
  expect(errors, "one message, not the cause and a pointer to it").toHaveLength(1);
  const advice = new RegExp(
    [
      /^State Flow start failed: Git has no commit identity \(user\.name and user\.email\) for the State Flow /,
      /store (.+?) \(git: .+?\), and State Flow does not invent one\. /,
      /Set it for all your repositories: (.+?); or for this store only: (.+?)\. /,
      /Nothing was enabled; run \/state-flow-start again once that is fixed\.$/,
    ]
      .map((part) => part.source)
      .join(""),
  ).exec(errors[0]!);
  expect(advice, errors[0]).not.toBeNull();
  expect(advice![1]).toBe(h.storeRoot);
  return { global: advice![2]!, storeOnly: advice![3]! };
}

function run(h: PiHarness, command: string): void {
  const result = spawnSync("sh", ["-c", command], { cwd: h.cwd, env: h.env, encoding: "utf8" });
  expect(result.status, `${command}: ${result.stderr}`).toBe(0);
}

async function startsNow(h: PiHarness): Promise<void> {
  await h.command("/state-flow-start");
  expect(h.accessor.episode()).toBe("active.bootstrap.fromTranscript");
  expect(h.notices.filter((n) => n.level === "error")).toHaveLength(1);
  expect(h.extensionErrors()).toEqual([]);
}

describe("a start without a Git identity", () => {
  it("the global commands, run as printed, make the next /state-flow-start work", async () => {
    const h = await withoutIdentity();
    const { global } = await failedStart(h);
    expect(global).toBe(
      'git config --global user.name "Your Name" && git config --global user.email "you@example.com"',
    );
    run(h, global);
    await startsNow(h);
  });

  it("the store-only commands, run as printed, make the next /state-flow-start work", async () => {
    const h = await withoutIdentity();
    const { storeOnly } = await failedStart(h);
    expect(storeOnly).toBe(
      `git -C ${h.storeRoot} config user.name "Your Name" && git -C ${h.storeRoot} config user.email "you@example.com"`,
    );
    run(h, storeOnly);
    const global = spawnSync("git", ["config", "--global", "user.email"], { env: h.env, encoding: "utf8" });
    expect(global.stdout, "nothing global was set").toBe("");
    await startsNow(h);
  });
});
