// Types of scripts/build.mjs (plain JavaScript, so any Node runs it as npm's `prepare`).
export declare const MANIFEST: string;
export interface BuildManifest {
  /** The build's entry module, in the output folder. */
  readonly entry: string;
  /** Every file the build wrote there (named by content). */
  readonly files: readonly string[];
  /** Every source the build holds, relative to the package root. */
  readonly sources: readonly string[];
}
/** Builds the package at `root` (default this checkout) into its dist/; throws where a module imports Pi at run time. */
export declare function buildPackage(options?: { root?: string; input?: string }): Promise<BuildManifest>;
