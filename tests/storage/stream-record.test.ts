import { describe, expect, it } from "vitest";
import { serializeScopeStream } from "../../storage/core/codec.ts";
import { stageCohort } from "../../storage/core/cohort.ts";
import { originateView, emptyStream, type ScopeStream } from "../../storage/core/temporal.ts";
import { assertStreamRecord, recordStream } from "../../storage/stream-record.ts";

const paths = {
  scope: "global" as const,
  dir: "",
  checkpoint: "checkpoint.json",
  patches: "patches.jsonl",
  meta: "meta.json",
};
const store = { root: "/store", git: false };

/** A global stream with `n` records and its exact bytes. */
function stream(n: number): { stream: ScopeStream; bytes: { checkpoint: Buffer; patches: Buffer } } {
  let view = originateView("l-test", {
    global: emptyStream("global"),
    cwd: emptyStream("cwd"),
    session: emptyStream("session"),
  });
  for (let i = 1; i <= n; i++) view = stageCohort(view, { global: { working: { g: i } } }).view;
  const files = serializeScopeStream(view.streams.global);
  return {
    stream: view.streams.global,
    bytes: { checkpoint: Buffer.from(files.checkpoint), patches: Buffer.from(files.patches) },
  };
}

describe("stream record", () => {
  it("records the pair's hashes and boundaries, and proves the same bytes", () => {
    const { stream: s, bytes } = stream(3);
    const record = recordStream(s, bytes);
    expect(record).toMatchObject({ records: 3, head: { step: 3 }, through: { step: 0 } });
    expect(record.checkpoint).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(() => assertStreamRecord(paths, record, bytes, store)).not.toThrow();
  });

  it("names a cut tail with what each side says and both ways out", () => {
    const written = stream(3);
    const cut = stream(2);
    const record = recordStream(written.stream, written.bytes);
    const error = (() => {
      try {
        assertStreamRecord(paths, record, { checkpoint: written.bytes.checkpoint, patches: cut.bytes.patches }, store);
      } catch (e) {
        return e as Error & { code: string; file: string };
      }
      throw new Error("no refusal");
    })();
    expect(error.code).toBe("stream-mismatch");
    expect(error.file).toBe("patches.jsonl");
    expect(error.message).toContain("/store/patches.jsonl holds 2 records ending at step 2");
    expect(error.message).toContain("records that State Flow wrote 3 records ending at step 3");
    expect(error.message).toContain('delete the "stream" member of /store/meta.json');
  });

  it("names a missing or empty member, and gives the session scope no way to drop its proof", () => {
    const written = stream(1);
    const record = recordStream(written.stream, written.bytes);
    const session = { ...paths, scope: "session" as const };
    expect(() =>
      assertStreamRecord(session, record, { checkpoint: written.bytes.checkpoint, patches: null }, store),
    ).toThrow(/patches\.jsonl is missing.*new session \(\/new\)/);
    expect(() =>
      assertStreamRecord(paths, record, { checkpoint: Buffer.alloc(0), patches: written.bytes.patches }, store),
    ).toThrow(/checkpoint\.json is empty, but .* records that State Flow wrote a checkpoint through step 0/);
  });

  it("in a Git store points at the commits that wrote the files", () => {
    const written = stream(2);
    const record = recordStream(written.stream, written.bytes);
    expect(() =>
      assertStreamRecord(paths, record, { ...written.bytes, patches: Buffer.alloc(0) }, { root: "/g", git: true }),
    ).toThrow("git -C /g log --oneline -- meta.json");
  });

  it("files without a record (an earlier version's) are not proved", () => {
    expect(() =>
      assertStreamRecord(paths, undefined, { checkpoint: null, patches: Buffer.from("x") }, store),
    ).not.toThrow();
  });
});
