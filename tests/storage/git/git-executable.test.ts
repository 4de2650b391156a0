// "Git absent" is decided by a PATH search alone: an executable file named git is found, a
// directory or a non-executable file of that name is not, and relative PATH entries are ignored.
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { findGitExecutable } from "../../../storage/git/git-executable.ts";

const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));
const temp = () => {
  const d = mkdtempSync(join(tmpdir(), "sf-gitexe-"));
  dirs.push(d);
  return d;
};

describe("findGitExecutable", () => {
  it("finds the first executable git on PATH and skips what is not one", () => {
    const notExecutable = temp();
    writeFileSync(join(notExecutable, "git"), "#!/bin/sh\n");
    const directory = temp();
    mkdirSync(join(directory, "git"));
    const real = temp();
    writeFileSync(join(real, "git"), "#!/bin/sh\n");
    chmodSync(join(real, "git"), 0o755);
    const PATH = ["relative/bin", notExecutable, directory, real].join(":");
    expect(findGitExecutable({ PATH })).toBe(join(real, "git"));
  });

  it("is null when no PATH entry holds git, and checks an explicit binary itself", () => {
    expect(findGitExecutable({ PATH: temp() })).toBeNull();
    expect(findGitExecutable({ PATH: "" }, join(temp(), "missing-git"))).toBeNull();
  });
});
