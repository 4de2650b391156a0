// Resolves `@earendil-works/*` as if imported from inside this folder, so its node_modules wins.
const here = new URL("./package.json", import.meta.url).href;

export async function resolve(specifier, context, nextResolve) {
  if (specifier.startsWith("@earendil-works/")) return nextResolve(specifier, { ...context, parentURL: here });
  return nextResolve(specifier, context);
}
