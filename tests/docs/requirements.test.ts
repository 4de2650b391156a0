// docs/requirements.md maps spec 001's requirements to the tests that prove them. This keeps the map
// true: every cited file exists and still holds the cited title as a test title, every section of 001
// is there with at least one requirement, the twenty acceptance properties are all there, and the
// counts at the top match the lines. The checks run on the real map and, as negative controls, on
// maps and sources made to fail.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "..", "..");
const MAP = "docs/requirements.md";

/** 001's headings in its order (the first is its title), then the section for its acceptance properties. */
const SECTIONS = [
  "Pi State Flow",
  "Installation",
  "Configuration",
  "Usage and activation",
  "State, scope, and time",
  "Lazy historical reads",
  "Temporal storage",
  "Runtime ownership and Git publication",
  "File-only recovery",
  "Existing stores and migration",
  "Unified semantic mutation and terminal resolution",
  "Artifact compilation and acquisition",
  "Materialized-first policy",
  "Skill compilation",
  "Optional memory curation",
  "Handoff quality and external reality",
  "Context lifecycle and boundaries",
  "Architecture and validation",
  "Twenty temporal acceptance properties",
];
const PROPERTIES = SECTIONS.length - 1;

interface Requirement {
  id: string;
  section: string;
  line: number;
  tests: { file: string; title: string; line: number }[];
  status: "tested" | "untested" | "not implemented";
  /** Status lines given (untested / not implemented), to catch one given twice or beside tests. */
  statusLines: number;
}

interface ParsedMap {
  counts: { requirements: number; tested: number; untested: number; notImplemented: number } | null;
  headings: string[];
  requirements: Requirement[];
  problems: string[];
}

const REQUIREMENT = /^- (\d+\.\d+|P\d+) \S/;
const CITATION = /^ {2}- (tests\/\S+\.test\.ts) › (.+)$/;
const UNTESTED = /^ {2}- untested(?:: \S.*)?$/;
const NOT_IMPLEMENTED = /^ {2}- not implemented: \S/;
const COUNTS = /^\*\*Counts:\*\* (\d+) requirements: (\d+) tested, (\d+) untested, (\d+) deliberately not implemented$/;

/** The map's headings, requirements with their citations and status lines, and what does not parse. */
function parseMap(text: string): ParsedMap {
  const lines = text.split("\n");
  const problems: string[] = [];
  const headings: string[] = [];
  const requirements: Requirement[] = [];
  let counts: ParsedMap["counts"] = null;
  let section: string | null = null;
  let current: Requirement | null = null;
  // The item a continuation line belongs to: a citation's title, or a status line's note.
  let open: { kind: "citation"; index: number } | { kind: "status" } | null = null;
  lines.forEach((line, i) => {
    const n = i + 1;
    const count = COUNTS.exec(line);
    if (count) {
      const [requirements, tested, untested, notImplemented] = count.slice(1).map(Number) as [
        number,
        number,
        number,
        number,
      ];
      counts = { requirements, tested, untested, notImplemented };
    }
    if (line.startsWith("## ")) {
      section = line.slice(3);
      headings.push(section);
      current = null;
      open = null;
      return;
    }
    if (section === null) return;
    const requirement = REQUIREMENT.exec(line);
    if (requirement) {
      current = { id: requirement[1]!, section, line: n, tests: [], status: "tested", statusLines: 0 };
      requirements.push(current);
      open = null;
      return;
    }
    if (line.startsWith("    ") && !line.startsWith("     ") && open !== null && current !== null) {
      if (open.kind === "citation") current.tests[open.index]!.title += ` ${line.trim()}`;
      return;
    }
    if (line.startsWith("  - ")) {
      if (current === null) {
        problems.push(`${MAP}:${n}: a sub-item outside any requirement`);
        return;
      }
      const citation = CITATION.exec(line);
      if (citation) {
        current.tests.push({ file: citation[1]!, title: citation[2]!, line: n });
        open = { kind: "citation", index: current.tests.length - 1 };
      } else if (UNTESTED.test(line) || NOT_IMPLEMENTED.test(line)) {
        current.status = UNTESTED.test(line) ? "untested" : "not implemented";
        current.statusLines++;
        open = { kind: "status" };
      } else problems.push(`${MAP}:${n}: not a citation, "- untested" or "- not implemented: <reason>"`);
      return;
    }
    if (line.trim() === "") open = null;
    // Prose may open a section; once its requirements begin, every line is one of theirs.
    else if (current !== null) problems.push(`${MAP}:${n}: not a requirement, citation, status or continuation`);
  });
  return { counts, headings, requirements, problems };
}

/** Reads `i`'s string literal (quotes or backticks, no `${}`), unescaped; null when there is none. */
function readLiteral(source: string, i: number): { value: string; end: number } | null {
  const quote = source[i];
  if (quote !== '"' && quote !== "'" && quote !== "`") return null;
  let value = "";
  for (let j = i + 1; j < source.length; j++) {
    const c = source[j]!;
    if (c === quote) return { value, end: j + 1 };
    if (c === "\n" && quote !== "`") return null;
    if (quote === "`" && c === "$" && source[j + 1] === "{") return null;
    if (c !== "\\") {
      value += c;
      continue;
    }
    const next = source[++j]!;
    if (next === "u" && source[j + 1] === "{") {
      const close = source.indexOf("}", j);
      value += String.fromCodePoint(parseInt(source.slice(j + 2, close), 16));
      j = close;
    } else if (next === "u") {
      value += String.fromCharCode(parseInt(source.slice(j + 1, j + 5), 16));
      j += 4;
    } else value += ({ n: "\n", t: "\t", r: "\r", "0": "\0" } as Record<string, string>)[next] ?? next;
  }
  return null;
}

const skipSpace = (source: string, i: number) => {
  while (i < source.length && /\s/.test(source[i]!)) i++;
  return i;
};

/** The index after the parenthesis that closes the one at `open` (string literals skipped); -1 if none. */
function closeParen(source: string, open: number): number {
  let depth = 0;
  for (let i = open; i < source.length; i++) {
    const c = source[i]!;
    if (c === '"' || c === "'" || c === "`") {
      const literal = readLiteral(source, i);
      if (literal) i = literal.end - 1;
    } else if (c === "(") depth++;
    else if (c === ")" && --depth === 0) return i + 1;
  }
  return -1;
}

/**
 * The literal titles of a test file's tests: the first argument of `it(…)`/`test(…)` (also `.only`,
 * `.concurrent`, and `.each(table)(…)`/`.skipIf(cond)(…)` with the table skipped) when it is one
 * string literal or literals joined by `+`. Skipped and todo tests prove nothing and are left out.
 */
function testTitles(source: string): Set<string> {
  const titles = new Set<string>();
  for (const head of source.matchAll(/(?<![.\w$])(?:it|test)((?:\.\w+)*)\s*\(/g)) {
    const modifiers = head[1]!.split(".").filter(Boolean);
    if (modifiers.some((m) => m === "skip" || m === "todo")) continue;
    let i = head.index + head[0].length;
    if (modifiers.some((m) => m === "each" || m === "for" || m === "skipIf" || m === "runIf")) {
      const end = closeParen(source, i - 1);
      if (end < 0) continue;
      i = skipSpace(source, end);
      if (source[i] !== "(") continue;
      i++;
    }
    let title = "";
    for (;;) {
      const literal = readLiteral(source, skipSpace(source, i));
      if (!literal) {
        title = "";
        break;
      }
      title += literal.value;
      i = skipSpace(source, literal.end);
      if (source[i] !== "+") break;
      i++;
    }
    if (title !== "" && (source[i] === "," || source[i] === ")")) titles.add(title);
  }
  return titles;
}

/** Everything wrong with the map: unparsed lines, sections, properties, counts, citations. */
function mapProblems(text: string, readSource: (file: string) => string | null): string[] {
  const { counts, headings, requirements, problems } = parseMap(text);
  if (headings.join("\n") !== SECTIONS.join("\n"))
    problems.push(`the headings are not 001's sections in order: ${JSON.stringify(headings)}`);
  for (const [index, section] of SECTIONS.entries()) {
    const own = requirements.filter((r) => r.section === section);
    if (own.length === 0) problems.push(`section "${section}" lists no requirement`);
    const expected = own.map((_, k) => (index < PROPERTIES ? `${index}.${k + 1}` : `P${k + 1}`));
    if (own.map((r) => r.id).join(" ") !== expected.join(" "))
      problems.push(`section "${section}" numbers its requirements ${own.map((r) => r.id).join(" ")}`);
  }
  const properties = requirements.filter((r) => r.section === SECTIONS[PROPERTIES]);
  if (properties.length !== 20) problems.push(`${properties.length} acceptance properties, not twenty`);
  const sources = new Map<string, Set<string> | null>();
  for (const r of requirements) {
    if (r.statusLines > 1) problems.push(`${r.id} (line ${r.line}) has ${r.statusLines} status lines`);
    if (r.statusLines === 1 && r.tests.length > 0) problems.push(`${r.id} (line ${r.line}) cites tests and a status`);
    if (r.statusLines === 0 && r.tests.length === 0) problems.push(`${r.id} (line ${r.line}) cites no test`);
    for (const t of r.tests) {
      if (!sources.has(t.file)) {
        const source = readSource(t.file);
        sources.set(t.file, source === null ? null : testTitles(source));
      }
      const titles = sources.get(t.file);
      if (titles === null) problems.push(`${r.id} (line ${t.line}): ${t.file} does not exist`);
      else if (!titles!.has(t.title)) problems.push(`${r.id} (line ${t.line}): ${t.file} has no test "${t.title}"`);
    }
  }
  const tally = {
    requirements: requirements.length,
    tested: requirements.filter((r) => r.status === "tested").length,
    untested: requirements.filter((r) => r.status === "untested").length,
    notImplemented: requirements.filter((r) => r.status === "not implemented").length,
  };
  if (counts === null) problems.push("no counts line at the top");
  else if (JSON.stringify(counts) !== JSON.stringify(tally))
    problems.push(`the counts say ${JSON.stringify(counts)}; the lines give ${JSON.stringify(tally)}`);
  return problems;
}

const readRepoFile = (file: string): string | null =>
  existsSync(join(ROOT, file)) ? readFileSync(join(ROOT, file), "utf8") : null;
const map = readFileSync(join(ROOT, MAP), "utf8");

describe("docs/requirements.md", () => {
  it("parses into 001's sections and requirements, each with tests or a status", () => {
    const { headings, requirements, problems } = parseMap(map);
    expect(problems).toEqual([]);
    expect(headings).toEqual(SECTIONS);
    expect(requirements.length).toBeGreaterThan(200);
    expect(requirements.filter((r) => r.status === "tested").length).toBeGreaterThan(200);
  });

  it("cites only files that exist and titles their tests still have; its counts match its lines", () => {
    expect(mapProblems(map, readRepoFile)).toEqual([]);
  });

  it("is linked from the README", () => {
    expect(readRepoFile("README.md")).toContain("(docs/requirements.md)");
  });
});

describe("the map's checks can fail (negative controls)", () => {
  // A requirement with exactly one citation, on one line, so each edit below changes one thing.
  const lines = map.split("\n");
  const single = parseMap(map).requirements.find(
    (r) => r.tests.length === 1 && !lines[r.tests[0]!.line]!.startsWith("    "),
  )!;
  const cited = single.tests[0]!;
  const citation = lines[cited.line - 1]!;

  it("a cited title that changed by one character is reported", () => {
    expect(mapProblems(map.replace(citation, `${citation}x`), readRepoFile)).toEqual([
      `${single.id} (line ${cited.line}): ${cited.file} has no test "${cited.title}x"`,
    ]);
  });

  it("a cited file that does not exist is reported", () => {
    const edited = map.replace(citation, citation.replace(cited.file, "tests/gone.test.ts"));
    expect(mapProblems(edited, readRepoFile)).toEqual([
      `${single.id} (line ${cited.line}): tests/gone.test.ts does not exist`,
    ]);
  });

  it("counts that disagree with the lines are reported", () => {
    const edited = map.replace(/(\d+) untested,/, (_, n: string) => `${Number(n) + 1} untested,`);
    expect(mapProblems(edited, readRepoFile)).toEqual([expect.stringMatching(/^the counts say /)]);
  });

  it("a missing section, a requirement without tests and tests beside a status are reported", () => {
    const withoutSection = map.replace(/^## Skill compilation\n[\s\S]*?(?=^## )/m, "");
    expect(mapProblems(withoutSection, readRepoFile)).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^the headings are not 001's sections/),
        'section "Skill compilation" lists no requirement',
      ]),
    );
    expect(mapProblems(map.replace(citation, ""), readRepoFile)).toContainEqual(
      `${single.id} (line ${single.line}) cites no test`,
    );
    expect(mapProblems(map.replace(citation, `${citation}\n  - untested`), readRepoFile)).toContainEqual(
      `${single.id} (line ${single.line}) cites tests and a status`,
    );
    expect(mapProblems(map.replace(citation, "  - not implemented:"), readRepoFile)).toContainEqual(
      expect.stringMatching(/not a citation, "- untested"/),
    );
    expect(mapProblems(map.replace(citation, `${citation}\n  a stray line`), readRepoFile)).toContainEqual(
      expect.stringMatching(/not a requirement, citation, status or continuation$/),
    );
  });

  it("a title counts only as a whole, literal test title", () => {
    const source = [
      'it("the whole title", () => {});',
      'it(\n  "joined " +\n    "across lines",\n  () => {},\n);',
      "it.each([[1, \"(x)\"]])('each %s: it\\'s escaped', () => {});",
      "test(`plain template`, () => {});",
      "it(`with ${x} inside`, () => {});",
      'it.skip("a skipped test", () => {});',
      'describe("a describe title", () => {});',
      'expect(/stray/.test("a stray string")).toBe(true);',
      'it("prefix " + name, () => {});',
    ].join("\n");
    expect([...testTitles(source)].sort()).toEqual([
      "each %s: it's escaped",
      "joined across lines",
      "plain template",
      "the whole title",
    ]);
    const file = "tests/x.test.ts";
    const read = (f: string) => (f === file ? source : readRepoFile(f));
    const citing = (title: string) => map.replace(citation, `  - ${file} › ${title}`);
    expect(mapProblems(citing("joined across lines"), read)).toEqual([]);
    for (const title of ["the whole", "a describe title", "a stray string", "a skipped test", "prefix "])
      expect(mapProblems(citing(title), read), title).toEqual([expect.stringMatching(/has no test/)]);
  });
});
