/** The digest of the CLI's sources under `root`, with the node and esbuild that build them. */
export function bundleKey(root: string, esbuildVersion: string): string;
/** The bundle's directory for the sources under `root` (built when missing); undefined: use tsx. */
export function cliBundle(root: string): Promise<string | undefined>;
/** The environment variable naming the bundle's directory for the processes hil starts. */
export const BUNDLE_DIR_ENV: string;
/** Where bundles are kept: HIL_BUNDLE_CACHE, else cli-bundle in the user's erdma-hil cache. */
export function bundleCacheDir(env?: NodeJS.ProcessEnv): string;
