// Every scope proves its checkpoint/patches pair against the record its own meta.json keeps of
// what State Flow last wrote there. Shared global/cwd pairs are read live by every session, and a
// tail cut short, emptied or put back from an older copy still parses and still fits the reader's
// lineage: without this record such a pair reads as an older or emptier state with nothing said.
//
// The record holds the exact byte hashes of both files (any change shows) and the boundaries the
// pair ran through and up to (the message can say what disagrees: "2 records ending at step 4",
// not only "bytes differ"). It is written in the same publication as the pair, so a crash leaves
// both or neither (the journal / the commit). Files an earlier version wrote carry no record: they
// load unproven and gain one on the next write (spec 001 keeps older stores readable).

import { join } from "node:path";
import { parseScopeStream, type StreamRecord } from "./core/codec.ts";
import { errorMessage } from "./core/errors.ts";
import { sha256Hex } from "./core/json.ts";
import type { ScopeName } from "./core/scope-state.ts";
import type { Boundary, ScopeStream } from "./core/temporal.ts";
import { StoreError } from "./store-error.ts";

export interface PairBytes {
  readonly checkpoint: Uint8Array | null;
  readonly patches: Uint8Array | null;
}

/** Where a scope's files live, store-relative. */
export interface PairPaths {
  readonly scope: ScopeName;
  readonly dir: string;
  readonly checkpoint: string;
  readonly patches: string;
  readonly meta: string;
}

const hashOf = (bytes: Uint8Array): string => `sha256:${sha256Hex(bytes)}`;

function headOf(stream: ScopeStream): Boundary {
  const last = stream.tail[stream.tail.length - 1];
  return last ? { lineage: last.lineage, id: last.id, step: last.step } : stream.checkpoint.through;
}

/** The record of a pair as written: its bytes' hashes and the boundaries its stream holds. */
export function recordStream(
  stream: ScopeStream,
  bytes: { checkpoint: Uint8Array; patches: Uint8Array },
): StreamRecord {
  return {
    checkpoint: hashOf(bytes.checkpoint),
    patches: hashOf(bytes.patches),
    through: stream.checkpoint.through,
    head: headOf(stream),
    records: stream.tail.length,
  };
}

function boundaryText(boundary: Boundary): string {
  return `step ${boundary.step} (${boundary.id})`;
}

function recordedText(record: StreamRecord, which: "checkpoint" | "patches"): string {
  return which === "checkpoint"
    ? `a checkpoint through ${boundaryText(record.through)}`
    : `${record.records} record${record.records === 1 ? "" : "s"} ending at ${boundaryText(record.head)}`;
}

/** What one member holds now, in the words the record uses; `stream` when the pair still parses. */
function holdsText(bytes: Uint8Array | null, which: "checkpoint" | "patches", stream: ScopeStream | Error): string {
  if (bytes === null) return "is missing";
  if (bytes.length === 0) return "is empty";
  if (stream instanceof Error) return `cannot be read (${stream.message})`;
  if (which === "checkpoint") return `holds a checkpoint through ${boundaryText(stream.checkpoint.through)}`;
  const n = stream.tail.length;
  return `holds ${n} record${n === 1 ? "" : "s"}${n > 0 ? ` ending at ${boundaryText(headOf(stream))}` : ""}`;
}

/**
 * Throws the named `stream-mismatch` error when the pair is not the one `record` was written
 * with; nothing when it is, or when there is no record (files of an earlier version).
 */
export function assertStreamRecord(
  paths: PairPaths,
  record: StreamRecord | undefined,
  bytes: PairBytes,
  store: StoreKind,
): void {
  if (record === undefined) return;
  const differs = (["checkpoint", "patches"] as const).filter((which) => {
    const member = bytes[which];
    return member === null || hashOf(member) !== record[which];
  });
  if (differs.length === 0) return;
  let stream: ScopeStream | Error;
  try {
    stream = parseScopeStream(paths.scope, bytes, paths.dir || ".");
  } catch (error) {
    stream = new Error(errorMessage(error));
  }
  const at = (path: string) => join(store.root, path);
  const findings = differs.map(
    (which) =>
      `${at(paths[which])} ${holdsText(bytes[which], which, stream)}, ` +
      `but ${at(paths.meta)} records that State Flow wrote ${recordedText(record, which)}`,
  );
  const damaged = differs.map((which) => paths[which]);
  throw new StoreError(
    "stream-mismatch",
    `The ${paths.scope} scope's files disagree: ${findings.join("; ")}. One of them was cut short, emptied, ` +
      `replaced or edited outside State Flow (a disk-full write, a sync client, a hand edit), so the scope was not ` +
      `read: no older or emptier state stands in for it. ${remedy(paths, damaged, store)}`,
    { file: damaged[0] },
  );
}

/** Where the store is, for the commands a refusal names. */
export interface StoreKind {
  readonly root: string;
  readonly git: boolean;
}

function remedy(paths: PairPaths, damaged: readonly string[], store: StoreKind): string {
  const files = [...damaged, paths.meta].join(" ");
  const putBack = store.git
    ? `Put back the bytes State Flow committed: git -C ${store.root} log --oneline -- ${paths.meta} names the ` +
      `commits that wrote them; git -C ${store.root} checkout <commit> -- ${files} restores them (commit them if ` +
      `they differ from HEAD)`
    : `Put back the bytes State Flow wrote (from a backup or your sync client's history)`;
  if (paths.scope === "session") {
    return (
      `${putBack}. This branch's checkpoints name these exact files, so nothing else restores it; without them, ` +
      `continue in a new session (/new), whose own session layer starts over the shared state.`
    );
  }
  const those = damaged.map((path) => join(store.root, path)).join(" and ");
  return (
    `${putBack}, or, to continue from what ${those} hold${damaged.length === 1 ? "s" : ""} now and give up the ` +
    `difference, delete the "stream" member of ${join(store.root, paths.meta)}: State Flow records the files ` +
    `again on its next write.`
  );
}
