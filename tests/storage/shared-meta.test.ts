import { describe, expect, it } from "vitest";
import { serializeScopeMeta } from "../../storage/core/codec.ts";
import { readSharedMeta, sharedMetaWith, sharedMetaWrites } from "../../storage/shared-meta.ts";
import { emptyStream } from "../../storage/core/temporal.ts";

const cwd = { cwd: "/w", cwdKey: "--w--" };
const streams = { global: emptyStream("global"), cwd: emptyStream("cwd"), session: emptyStream("session") };

describe("shared meta", () => {
  it("reads a scope's meta.json and refuses an unreadable or swapped one by name", () => {
    const global = Buffer.from(serializeScopeMeta({ version: 1, kind: "global", artifacts: {} }));
    expect(readSharedMeta(global, "global", "meta.json")).toMatchObject({ kind: "global" });
    expect(readSharedMeta(null, "global", "meta.json")).toBeNull();
    expect(() => readSharedMeta(Buffer.from("{"), "global", "meta.json", "/s")).toThrow(
      /\/s\/meta\.json cannot be read: .*or delete \/s\/meta\.json/,
    );
    expect(() => readSharedMeta(global, "cwd", "--w--/meta.json", "/s")).toThrow(
      /is the global scope's meta\.json, not the cwd scope's/,
    );
  });

  it("records a written pair, upgrades a pair without a record and keeps a recorded one untouched", () => {
    const pair = { checkpoint: Buffer.from("{}\n"), patches: Buffer.from("") };
    const writes = new Map<string, Buffer | null>([
      ["checkpoint.json", pair.checkpoint],
      ["patches.jsonl", pair.patches],
    ]);
    sharedMetaWrites(new Map(), { ...cwd, sessionKey: "s" }, streams, writes);
    const global = JSON.parse(writes.get("meta.json")!.toString());
    expect(global.stream).toMatchObject({ records: 0 });
    // The cwd scope has no pair yet: its meta.json is created without a record.
    expect(JSON.parse(writes.get("--w--/meta.json")!.toString())).toEqual({
      version: 1,
      kind: "cwd",
      identity: cwd,
      artifacts: {},
    });
    const live = new Map<string, Buffer | null>([...writes]);
    const again = new Map<string, Buffer | null>();
    sharedMetaWrites(live, { ...cwd, sessionKey: "s" }, streams, again);
    expect([...again.keys()]).toEqual([]);
  });

  it("keeps the rest of the file when provenance changes", () => {
    const bytes = Buffer.from(serializeScopeMeta({ version: 1, kind: "cwd", identity: cwd, artifacts: {} }));
    const record = {
      sourceHash: `sha256:${"a".repeat(64)}`,
      compilerRevision: "artifact-v1",
    };
    const next = JSON.parse(
      sharedMetaWith(bytes, readSharedMeta(bytes, "cwd", "--w--/meta.json"), "cwd", cwd, {
        provenance: { "/k.md": record },
      }),
    );
    expect(next.identity).toEqual(cwd);
    expect(next.artifacts["/k.md"]).toMatchObject({ sourceHash: record.sourceHash });
  });
});
