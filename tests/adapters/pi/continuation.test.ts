// A fresh agent continues from what State Flow projects, and from nothing else (001, "Handoff
// quality": "fresh-agent continuation tests provide behavioral evidence"). An earlier real Pi
// session records, through patch_state, the four things a later run must not lose: a commitment
// with its consequence, a proposal the user left unanswered, an evidence locator with its validity
// and reconsideration conditions, and an uncertain hypothesis beside the observation that
// contradicts it. They go to cwd state: a new session "inherits only global/CWD state" (001,
// "Usage and activation"), never another session's layer. A new Pi session on the same store then
// gets a question that names none of them; its model reads only the context it receives and
// answers from it. Without the earlier patch (the negative control) the same reader's answer
// names none of them, so the answer cannot come from anywhere but the projection.
import { fauxAssistantMessage, fauxText, type Context } from "@earendil-works/pi-ai";
import { describe, expect, it } from "vitest";
import { call, contextText, harnessFactory, say, type PiHarness } from "../../support/pi-harness.ts";

const harness = harnessFactory();

const COMMITMENT = {
  promise: "release notes ship with v2.0",
  consequence: "freeze the changelog before tagging v2.0",
};
const OPEN_QUESTION = {
  proposal: "drop the legacy_users table",
  status: "proposed to the user, no answer yet: not agreed",
};
const EVIDENCE = {
  fact: "the payments API allows 100 requests per minute",
  from: "docs/payments-api.md#rate-limits",
  valid_while: "the payments API v3 is in use",
  reconsider_if: "the provider announces API v4",
};
const HYPOTHESIS = {
  claim: "CI timeouts come from DNS lookups",
  status: "uncertain",
  contradicted_by: "ci/run-4812.log shows the same timeouts with a local resolver",
};
const SESSION_ONLY = "scratch buffer of the earlier session";

/** What the earlier session records: all four in cwd state, one more value in its own session layer. */
const RECORD = {
  cwd: {
    contract: { commitments: { "release-notes": COMMITMENT } },
    working: {
      open_questions: { "legacy-table": OPEN_QUESTION },
      evidence: { "rate-limit": EVIDENCE },
      hypotheses: { "flaky-ci": HYPOTHESIS },
    },
  },
  session: { working: { scratch: SESSION_ONLY } },
  final: true,
};

const QUESTION = "Picking this up again: what do we owe, what is still open, what do we rely on, what is unsure?";

/** Every value at the leaves of `value`, with its dotted path. */
function leaves(value: unknown, path = ""): string[] {
  if (typeof value !== "object" || value === null) return [`${path}: ${String(value)}`];
  return Object.entries(value).flatMap(([key, inner]) => leaves(inner, path ? `${path}.${key}` : key));
}

/**
 * The fresh session's model: it answers from the JSON blocks of the user-role messages it
 * receives (the runtime context State Flow projects, nothing from the system prompt, whose
 * protocol names these kinds of records in general), one line per recorded value.
 */
function answerFromContext(context: Context): string {
  const lines: string[] = [];
  for (const message of context.messages) {
    if (message.role !== "user" || typeof message.content === "string") continue;
    for (const block of message.content) {
      if (block.type !== "text") continue;
      for (const json of block.text.matchAll(/```json\n([\s\S]*?)\n```/g)) lines.push(...leaves(JSON.parse(json[1]!)));
    }
  }
  return lines.length > 0 ? `From State Flow state:\n${lines.join("\n")}` : "State Flow state holds nothing yet.";
}

/** The fresh session's question, answered by the reader after the accepted final:true. */
async function freshAnswer(earlier: PiHarness): Promise<{ answer: string; seen: string }> {
  const fresh = await harness({ shareWith: earlier });
  await fresh.command("/state-flow-start");
  fresh.script(call("patch_state", { final: true }), (context) =>
    fauxAssistantMessage([fauxText(answerFromContext(context))], { stopReason: "stop" }),
  );
  await fresh.prompt(QUESTION);
  expect(fresh.extensionErrors()).toEqual([]);
  const answer = fresh.accessor.read(0).state.response;
  return { answer, seen: fresh.contexts.map(contextText).join("\n") };
}

async function earlierSession(patch: Parameters<typeof call>[1]): Promise<PiHarness> {
  const earlier = await harness();
  await earlier.command("/state-flow-start");
  earlier.script(call("patch_state", patch), say("Noted for the next session."));
  await earlier.prompt("Plan the v2.0 release with me.");
  // What the protocol asks of the earlier model, in the system prompt it ran with.
  const asked = earlier.contexts[0]!.systemPrompt;
  for (const rule of [/Silence is not acceptance/, /where each came from and when it expires/, /marked uncertain/])
    expect(asked).toMatch(rule);
  expect(earlier.toolResults().map((r) => [r.tool, r.isError])).toEqual([["patch_state", false]]);
  return earlier;
}

describe("a fresh session continues from the projected state alone", () => {
  it("its answer names the commitment, the open question, the evidence and the uncertain hypothesis", async () => {
    const { answer, seen } = await freshAnswer(await earlierSession(RECORD));
    expect(seen, "the earlier session's transcript is not replayed").not.toContain("Plan the v2.0 release");
    // The commitment with its consequence.
    expect(answer).toContain(COMMITMENT.promise);
    expect(answer).toContain(COMMITMENT.consequence);
    // The unanswered proposal, still marked as not agreed.
    expect(answer).toContain(OPEN_QUESTION.proposal);
    expect(answer).toContain(OPEN_QUESTION.status);
    // The evidence locator, when it stops holding and what would reopen it.
    expect(answer).toContain(EVIDENCE.from);
    expect(answer).toContain(EVIDENCE.valid_while);
    expect(answer).toContain(EVIDENCE.reconsider_if);
    // The hypothesis, still uncertain, beside the observation that contradicts it.
    expect(answer).toMatch(/hypotheses\.flaky-ci\.status: uncertain/);
    expect(answer).toContain(HYPOTHESIS.claim);
    expect(answer).toContain(HYPOTHESIS.contradicted_by);
    // The earlier session's own layer stays its own.
    expect(answer).not.toContain(SESSION_ONLY);
  }, 60_000);

  it("negative control: without the earlier patch, the same reader's answer names none of them", async () => {
    const { answer } = await freshAnswer(await earlierSession({ final: true }));
    expect(answer).toBe("State Flow state holds nothing yet.");
    for (const item of [COMMITMENT.consequence, OPEN_QUESTION.proposal, EVIDENCE.from, HYPOTHESIS.claim])
      expect(answer).not.toContain(item);
  }, 60_000);
});
