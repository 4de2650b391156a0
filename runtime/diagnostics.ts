// Opt-in JSONL diagnostics (`logging: true` in state-flow.json): rejected patch_state calls and
// unresolved terminal drafts, appended to <agentDir>/tmp/state-flow/logs.jsonl — never inside the
// state store, never into semantic state. A write failure changes nothing but one warning.

import { appendFileSync, mkdirSync } from "node:fs";
import { dirname, join, relative, resolve, isAbsolute } from "node:path";

export function diagnosticsPath(agentDir: string): string {
  return join(agentDir, "tmp", "state-flow", "logs.jsonl");
}

export interface DiagnosticRecord {
  kind: "rejected-patch" | "unresolved-draft";
  [key: string]: unknown;
}

export class Diagnostics {
  readonly path: string;
  private warned = false;
  private readonly enabled: boolean;
  private readonly storeRoot: string;
  private readonly warn: (message: string) => void;

  constructor(agentDir: string, enabled: boolean, storeRoot: string, warn: (message: string) => void) {
    this.path = diagnosticsPath(agentDir);
    this.enabled = enabled;
    this.storeRoot = storeRoot;
    this.warn = warn;
  }

  /** True when the log file would land inside the state store (capture must fail closed). */
  insideStore(): boolean {
    const rel = relative(resolve(this.storeRoot), resolve(this.path));
    return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
  }

  write(record: DiagnosticRecord): void {
    if (!this.enabled) return;
    try {
      if (this.insideStore()) {
        throw new Error(
          `the diagnostics path ${this.path} lies inside the state store ${this.storeRoot}; refusing to log there`,
        );
      }
      mkdirSync(dirname(this.path), { recursive: true });
      appendFileSync(this.path, `${JSON.stringify({ time: new Date().toISOString(), ...record })}\n`);
    } catch (error) {
      if (this.warned) return;
      this.warned = true;
      this.warn(
        `State Flow diagnostics could not be written (${(error as Error).message}); logging continues to be skipped.`,
      );
    }
  }
}
