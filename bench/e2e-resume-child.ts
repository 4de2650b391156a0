// Resume in a fresh OS process (spawned by bench/e2e.ts): open an existing session file with its
// store, let Pi bind the extensions (State Flow restores the branch's revision), send one prompt
// and stop at the first provider request: that request is the first context. Writes its timings to
// the result file and exits at once, so the copied session and store it ran on stay as they were.
// With `profileFile`, that span (open → first context, not the imports) is CPU-profiled.
//
//   node --experimental-strip-types bench/e2e-resume-child.ts '<json ResumeInput>'

import { writeFileSync } from "node:fs";

interface ResumeInput {
  mode: "native" | "file" | "git";
  agentDir: string;
  dirs: { cwd: string; sessionDir: string; storeRoot: string; gitCounter: string };
  env: NodeJS.ProcessEnv;
  sessionFile: string;
  resultFile: string;
  /** Profile the resume itself (open → first context) into this .cpuprofile. */
  profileFile?: string;
}

const input = JSON.parse(process.argv[2]!) as ResumeInput;
const processStartToMain = performance.now();
const t0 = performance.now();
const { openBenchSession } = await import("./e2e-session.ts");
const { providerRequest } = await import("../adapters/pi/provider-request.ts");
const { startProfiler } = await import("./e2e-profile.ts");
const { PrefixCache } = await import("./e2e-tokens.ts");
const importMs = performance.now() - t0;

process.env.PI_CODING_AGENT_DIR = input.agentDir;
process.env.PI_OFFLINE = "1";
const stopProfiler = input.profileFile ? await startProfiler(input.profileFile) : null;
const tOpen = performance.now();
const opened = await openBenchSession({ ...input, sessionFile: input.sessionFile });
const openedMs = performance.now() - tOpen;
opened.faux.appendResponses([
  async (context) => {
    const firstContextMs = performance.now() - tOpen;
    const processToFirstContextMs = performance.now();
    await stopProfiler?.();
    const request = providerRequest(context);
    // Sized as bench/e2e.ts sizes every request: what a provider is sent, not Pi's bookkeeping.
    const bytes = new PrefixCache().bill(request).bytes;
    const text = JSON.stringify(request.messages);
    const step = /at step (\d+)/.exec(text)?.[1];
    writeFileSync(
      input.resultFile,
      JSON.stringify({
        processStartToMain,
        importMs,
        openMs: openedMs,
        createMs: opened.createMs,
        bindMs: opened.bindMs,
        firstContextMs,
        processToFirstContextMs,
        contextBytes: bytes,
        messages: request.messages.length,
        restoredStep: step === undefined ? null : Number(step),
        errors: opened.notices.filter((n) => n.level === "error" || n.level === "warning").map((n) => n.message),
      }),
    );
    process.exit(0);
  },
]);
await opened.session.prompt("Resume: what is the state?");
throw new Error("the resumed session never asked the model");
