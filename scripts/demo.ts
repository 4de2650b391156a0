// `npm run demo [-- --keep]`: State Flow in a real, offline Pi session (see demo-session.ts).
// tsconfig's erasableSyntaxOnly keeps every module loadable by node --experimental-strip-types.

const args = process.argv.slice(2);
const unknown = args.filter((a) => a !== "--keep");
if (unknown.length > 0) {
  console.error(`usage: npm run demo [-- --keep]   (unknown: ${unknown.join(" ")})`);
  process.exit(2);
}
// Exit normally (so the demo's exit hook removes its temp dir) on Ctrl-C or a closed pipe (`| head`).
process.on("SIGINT", () => process.exit(130));
process.stdout.on("error", () => process.exit(0));
const { runDemo } = await import("./demo-session.ts");
try {
  await runDemo({ keep: args.includes("--keep") });
} catch (error) {
  console.error(`\nState Flow demo failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  process.exit(1);
}
