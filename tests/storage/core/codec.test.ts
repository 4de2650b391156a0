import { describe, expect, it } from "vitest";
import { rejection } from "../../support/rejection.ts";
import { parsePatchSet, stageCohort } from "../../../storage/core/cohort.ts";
import {
  parseRuntimeMeta,
  parseScopeMeta,
  parseScopeStream,
  parseSessionConfig,
  serializeRuntimeMeta,
  serializeScopeMeta,
  serializeScopeStream,
  serializeSessionConfig,
  PUBLICATION_POLICIES,
  type PublicationPolicy,
  type RuntimeMeta,
} from "../../../storage/core/codec.ts";
import type { PublicationPolicy as MachinePublicationPolicy } from "../../../machines/publication.ts";
import { hashJson } from "../../../storage/core/json.ts";
import { emptyStream, originateView, type TemporalView } from "../../../storage/core/temporal.ts";

function viewWith(count: number): TemporalView {
  let view = originateView("L");
  for (let i = 1; i <= count; i++) {
    view = stageCohort(view, parsePatchSet({ session: { working: { n: i, [`k${i}`]: [i] } } }).patches, `T${i}`).view;
  }
  return view;
}

describe("scope stream codec", () => {
  it("round-trips byte for byte and is deterministic", () => {
    const files = serializeScopeStream(viewWith(9).streams.session);
    expect(files.patches.split("\n")).toHaveLength(8);
    const parsed = parseScopeStream("session", files);
    expect(serializeScopeStream(parsed)).toEqual(files);
    expect(
      parseScopeStream("session", { checkpoint: Buffer.from(files.checkpoint), patches: Buffer.from(files.patches) }),
    ).toEqual(parsed);
    expect(files.checkpoint).toMatch(/^\{\n  "hash": "sha256:[0-9a-f]{64}",\n  "scope": "session",/);
  });

  it("treats an absent pair as an empty scope and a partial pair as corruption", () => {
    expect(parseScopeStream("cwd", { checkpoint: null, patches: null })).toEqual(emptyStream("cwd"));
    const files = serializeScopeStream(emptyStream("cwd"));
    expect(files.patches).toBe("");
    expect(
      rejection(() => parseScopeStream("cwd", { checkpoint: files.checkpoint, patches: null }, "store/--a--")).message,
    ).toMatch(/^store\/--a--\/patches\.jsonl: is missing while checkpoint\.json exists/);
    expect(rejection(() => parseScopeStream("cwd", { checkpoint: null, patches: "" })).code).toBe("incomplete-pair");
  });

  it("keeps replaying records that embed retired provenance, accepted before provenance moved to meta.json", () => {
    const legacy = { artifacts: { "/k/a.md": { description: "d", hash: hashJson("x"), compiled_at: "2020" } } };
    const view = stageCohort(originateView("L"), { global: legacy }, "T1").view;
    const files = serializeScopeStream(view.streams.global);
    expect(files.patches).toMatch(/"hash":"sha256:/);
    expect(serializeScopeStream(parseScopeStream("global", files))).toEqual(files);
  });

  it("rejects an oversized tail", () => {
    const files = serializeScopeStream(viewWith(7).streams.session);
    const extra = files.patches.split("\n")[0]!;
    expect(
      rejection(() =>
        parseScopeStream("session", { checkpoint: files.checkpoint, patches: `${files.patches}${extra}\n` }),
      ).code,
    ).toBe("oversized-tail");
  });

  it("rejects truncated, corrupt and wrongly scoped documents, naming the file", () => {
    const files = serializeScopeStream(viewWith(2).streams.session);
    expect(
      rejection(() => parseScopeStream("session", { ...files, patches: files.patches.slice(0, -5) })).message,
    ).toMatch(/patches\.jsonl: ends without a newline; the last record is truncated/);
    expect(
      rejection(() => parseScopeStream("session", { ...files, checkpoint: files.checkpoint.slice(0, 20) })).message,
    ).toMatch(/^session\/checkpoint\.json: is not valid JSON/);
    expect(rejection(() => parseScopeStream("cwd", files, "cwd")).message).toMatch(
      /^cwd\/checkpoint\.json#scope: must name the cwd scope/,
    );
    expect(rejection(() => parseScopeStream("session", { ...files, patches: `${files.patches}\n` })).message).toMatch(
      /patches\.jsonl:3: is an empty line/,
    );
    expect(
      rejection(() => parseScopeStream("session", { ...files, checkpoint: new Uint8Array([0xff, 0xfe]) })).message,
    ).toMatch(/is not valid UTF-8/);
  });

  it("rejects records whose replay does not reproduce the recorded hash", () => {
    const files = serializeScopeStream(viewWith(2).streams.session);
    const [first, second] = files.patches.trimEnd().split("\n");
    const forged = JSON.parse(second!);
    forged.patch.working.n = 99;
    const error = rejection(() =>
      parseScopeStream("session", { ...files, patches: `${first}\n${JSON.stringify(forged)}\n` }),
    );
    expect(error.code).toBe("replay-mismatch");
    expect(error.message).toMatch(/^session\/patches\.jsonl:2: replay does not reproduce/);
  });

  it("rejects an edited checkpoint state", () => {
    const files = serializeScopeStream(viewWith(9).streams.session);
    const doc = JSON.parse(files.checkpoint);
    doc.state.working.n = 42;
    expect(rejection(() => parseScopeStream("session", { ...files, checkpoint: JSON.stringify(doc) })).code).toBe(
      "replay-mismatch",
    );
  });

  it("rejects no-op records", () => {
    const files = serializeScopeStream(viewWith(1).streams.session);
    const record = JSON.parse(files.patches);
    const noop = { ...record, id: "T9", parent: "T1", follows: "T1", step: 2, patch: { working: { n: 1 } } };
    expect(
      rejection(() => parseScopeStream("session", { ...files, patches: `${files.patches}${JSON.stringify(noop)}\n` }))
        .code,
    ).toBe("no-op-record");
  });

  it("rejects records out of lineage order, repeated ids and broken parent links", () => {
    const files = serializeScopeStream(viewWith(2).streams.session);
    const [first, second] = files.patches.trimEnd().split("\n");
    expect(rejection(() => parseScopeStream("session", { ...files, patches: `${second}\n${first}\n` })).code).toBe(
      "invalid-lineage",
    );
    const orphan = { ...JSON.parse(second!), parent: "elsewhere" };
    expect(
      rejection(() => parseScopeStream("session", { ...files, patches: `${first}\n${JSON.stringify(orphan)}\n` }))
        .message,
    ).toMatch(/parent elsewhere is not the preceding transition T1/);
  });

  it("names two histories of one scope joined by hand, whatever their steps; older unchained records load", () => {
    // Two machines' global streams from one start: A wrote steps 1–2, B (its own origin past step 5) step 6.
    const base = originateView("L-A");
    const a1 = stageCohort(base, parsePatchSet({ global: { working: { a: 1 } } }).patches, "A1").view;
    const a2 = stageCohort(a1, parsePatchSet({ global: { working: { a: 2 } } }).patches, "A2").view;
    const other = originateView("L-B", a1.streams, 5);
    const b1 = stageCohort(other, parsePatchSet({ global: { working: { b: 1 } } }).patches, "B1").view;
    const mine = serializeScopeStream(a2.streams.global);
    const theirs = serializeScopeStream(b1.streams.global).patches.trimEnd().split("\n").at(-1)!;
    expect(JSON.parse(theirs)).toMatchObject({ id: "B1", step: 6, follows: "A1" });
    // A hand merge keeping both sides' lines, B's after A's (its steps are higher): refused, named.
    const joined = { ...mine, patches: `${mine.patches}${theirs}\n` };
    const refused = rejection(() => parseScopeStream("global", joined));
    expect(refused.code).toBe("joined-histories");
    expect(refused.message).toMatch(/record B1 \(step 6\) was written after A1, not after A2, which precedes it here/);
    // Each side alone loads; so does a tail an older version wrote (no chain to check).
    expect(parseScopeStream("global", mine).tail.map((r) => r.follows)).toEqual(["genesis", "A1"]);
    const unchain = (patches: string) =>
      patches
        .trimEnd()
        .split("\n")
        .map((line) => JSON.stringify({ ...JSON.parse(line), follows: undefined }))
        .join("\n") + "\n";
    expect(parseScopeStream("global", { ...mine, patches: unchain(mine.patches) }).tail).toHaveLength(2);
    // (joined without the chain, only the replay can tell: B1's hash is of a state A2 never had)
    expect(rejection(() => parseScopeStream("global", { ...joined, patches: unchain(joined.patches) })).code).toBe(
      "replay-mismatch",
    );
  });

  it("rejects model-invisible junk fields in records", () => {
    const files = serializeScopeStream(viewWith(1).streams.session);
    const junk = { ...JSON.parse(files.patches), timestamp: 1 };
    expect(rejection(() => parseScopeStream("session", { ...files, patches: `${JSON.stringify(junk)}\n` })).code).toBe(
      "invalid-document",
    );
  });
});

describe("runtime documents", () => {
  const meta: RuntimeMeta = {
    version: 1,
    kind: "session",
    identity: { cwd: "/w/p", cwdKey: "--w-p--", sessionId: "u", sessionKey: "2026_u" },
    lineage: { id: "L", originStep: 0, window: [{ id: "T1", parent: "L", step: 1 }] },
    counters: { transitions: 1, runs: 1 },
    revision: "self",
    publication: { intent: "unconfirmed" },
    artifacts: { "/k/a.md": { sourceHash: hashJson("x"), compilerRevision: "artifact-v1" } },
  };

  it("round-trips session meta deterministically", () => {
    const bytes = serializeRuntimeMeta(meta);
    expect(parseRuntimeMeta(bytes)).toEqual(meta);
    expect(serializeRuntimeMeta(parseRuntimeMeta(bytes))).toBe(bytes);
  });

  it("rejects invalid lineage in meta", () => {
    const broken = { ...meta, lineage: { id: "L", originStep: 0, window: [{ id: "T2", parent: "X", step: 1 }] } };
    expect(rejection(() => parseRuntimeMeta(JSON.stringify(broken), "s/meta.json")).message).toMatch(
      /^s\/meta\.json#lineage: window\[0\] \(T2\) must descend from the origin L/,
    );
  });

  it("names the key of an invalid value", () => {
    expect(rejection(() => parseRuntimeMeta(JSON.stringify({ ...meta, revision: "abc" }), "s/meta.json")).message).toBe(
      's/meta.json#revision: must be "self" (the commit owning this file resolves it)',
    );
  });

  it("round-trips scope meta and session config", () => {
    const scopeMeta = {
      version: 1 as const,
      kind: "cwd" as const,
      identity: { cwd: "/w/p", cwdKey: "--w-p--" },
      artifacts: {},
    };
    expect(parseScopeMeta(serializeScopeMeta(scopeMeta))).toEqual(scopeMeta);
    const config = { version: 1 as const, enabled: true, remotePublication: "turn-end" as const };
    expect(parseSessionConfig(serializeSessionConfig(config))).toEqual(config);
    expect(
      rejection(() => parseSessionConfig(JSON.stringify({ ...config, remotePublication: "always" }), "c.json")).message,
    ).toBe("c.json#remotePublication: must be one of off, turn-end, transition");
  });
});

// machines/ imports nothing of ours, so the publication machine spells the policy out itself; these
// conversions stop compiling (npm run typecheck) as soon as the two types drift apart.
const toMachinePolicy = (policy: PublicationPolicy): MachinePublicationPolicy => policy;
const toCodecPolicy = (policy: MachinePublicationPolicy): PublicationPolicy => policy;

describe("publication policy", () => {
  it("is the same type in the codec and in the publication machine", () => {
    const roundTrip = PUBLICATION_POLICIES.map((policy) => toCodecPolicy(toMachinePolicy(policy)));
    expect(roundTrip).toEqual(["off", "turn-end", "transition"]);
  });
});
