// Guard: Pi 0.84 needs Node >= 22.19 (it imports fs.globSync). npm scripts run on the
// project's pinned `node` devDependency; this fails loudly when that did not happen
// (e.g. running ./node_modules/.bin/vitest directly on the system Node 20).
const [major, minor] = process.versions.node.split(".").map(Number);
if (major < 22 || (major === 22 && minor < 19)) {
  console.error(
    `State Flow needs Node >= 22.19 but this is ${process.version}. ` +
      "Run through npm (npm test / npm run …) so the pinned node devDependency is used, " +
      "and make sure `npm ci` ran its install script (allowScripts.node).",
  );
  process.exit(1);
}
