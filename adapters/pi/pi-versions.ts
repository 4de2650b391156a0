// Where the Pi versions State Flow supports differ (0.84.x, the version spec 001 targets, and
// today's 1.x), as small named seams; the rest of the adapter is the same for both. README's
// "Pi versions" table lists every Pi API State Flow uses.
//
// - What started a run. 0.84 emits before_agent_start only for a user prompt (`prompt`); 1.x
//   (since 1.2) also for a run a custom message started (`messageType: "custom"`, `message`, and
//   no `prompt`).
// - A run no before_agent_start opened. 0.84 starts a run for `sendMessage(…, {triggerTurn: true})`
//   without before_agent_start, so neither the protocol nor the run anchor can be returned from it.
//   Such a run is recognized at its agent_start, and its anchor is steered in there: Pi delivers
//   steering queued before the first inference ahead of it. Its system prompt is whatever Pi 0.84
//   kept from the previous run.
// - What a provider is asked: adapters/pi/provider-request.ts (0.86 moved the system prompt and
//   tools into system messages; `context` handlers see neither in 1.x, and Pi restores them).

import type { RunTrigger } from "../../machines/specification.ts";
import type { ListedSkill } from "./skill-listing.ts";

/** The fields of before_agent_start either version may send. */
export interface BeforeAgentStartFields {
  readonly prompt?: unknown;
  /** Images attached to the prompt (both versions). */
  readonly images?: unknown;
  readonly messageType?: unknown;
  readonly message?: { readonly customType?: unknown };
  /** What Pi built the system prompt from (both versions): the Skills it lists. */
  readonly systemPromptOptions?: { readonly skills?: readonly ListedSkill[] };
}

export function runTriggerOf(event: BeforeAgentStartFields): RunTrigger {
  if (typeof event.prompt === "string") {
    const images = Array.isArray(event.images) ? event.images.length : 0;
    return { kind: "prompt", text: withImages(event.prompt, images) };
  }
  const source = event.message?.customType;
  return { kind: "message", source: typeof source === "string" && source !== "" ? source : null };
}

/**
 * A request's text as the specification records it: an image sent without words is a request too (the
 * model sees the image in the user's message; the specification says there is one rather than "no request").
 */
export function withImages(text: string, images: number): string {
  if (text.trim() !== "" || images === 0) return text;
  return `(${images === 1 ? "an image" : `${images} images`} without text: see the user's message)`;
}

/** The Pi versions CI runs the Pi-facing tests and the demo on (README, "Pi versions"). */
export const TESTED_PI_VERSIONS = ["0.84.4", "1.6.0"] as const;

/**
 * null for a Pi State Flow supports (0.84.x from 0.84.4, and 1.x); otherwise the warning to show
 * once. A newer major may change the events above without a type error Pi could report.
 */
export function piVersionWarning(version: string): string | null {
  const [major, minor, patch] = version.split(/[.-]/).map(Number) as [number, number, number];
  const supported = (major === 0 && minor === 84 && patch >= 4) || major === 1;
  if (supported) return null;
  return (
    `State Flow supports Pi 0.84.x (from 0.84.4) and 1.x and is tested on ${TESTED_PI_VERSIONS.join(" and ")}; ` +
    `this is Pi ${version}. It may misread Pi's run events here: use a supported Pi, or /state-flow-stop if ` +
    "runs behave unexpectedly."
  );
}
