// A child process that publishes one cohort through the Git backend, for tests that SIGKILL it at
// a named write step (STATE_FLOW_KILL_AT, storage/fs/crash-points.ts).
// Usage: git-publish-child.ts <store root> <writes: JSON object of path → text, or null to delete>
// Prints the new revision once the publication returned.

import { openGitBackend } from "../../../storage/git/git-backend.ts";
import { findGitExecutable } from "../../../storage/git/git-runner.ts";

const [root, spec] = process.argv.slice(2);
const writes = new Map(
  Object.entries(JSON.parse(spec!) as Record<string, string | null>).map(
    ([path, text]) => [path, text === null ? null : Buffer.from(text)] as const,
  ),
);
const binary = findGitExecutable(process.env)!;
const backend = (await openGitBackend({ root: root!, binary, env: process.env, generation: `child-${process.pid}` }))!;
const receipt = await backend.publish({ basis: await backend.loadCurrent([...writes.keys()]), writes });
process.stdout.write(`${receipt.pointer.revision}\n`);
