// Runs the CLI from wherever hil is called: its bundle from the cache (bin/cli-bundle.mjs, built
// on the first start after a change to the sources), or the TypeScript sources through tsx when
// there is no bundle or HIL_NO_BUNDLE is set (HIL_SOURCE_MAPS=1: the bundle's stack traces name
// the TypeScript sources). `import("tsx")` is resolved from this file, so from
// the package's own node_modules, not from the working directory as `node --import tsx` would be;
// and tsx reads this package's tsconfig.json, not the first one above the working directory (it
// looks there unless told). Both hold for the processes hil starts, which inherit the environment.
import { fileURLToPath, pathToFileURL } from "node:url";
import { BUNDLE_DIR_ENV, cliBundle } from "./cli-bundle.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
process.env.TSX_TSCONFIG_PATH = fileURLToPath(new URL("../tsconfig.json", import.meta.url));
const bundle = process.env.HIL_NO_BUNDLE ? undefined : await cliBundle(root);
if (bundle) {
  if (process.env.HIL_SOURCE_MAPS) process.setSourceMapsEnabled(true);
  process.env[BUNDLE_DIR_ENV] = bundle;
  await import(pathToFileURL(`${bundle}/hil.mjs`).href);
} else {
  delete process.env[BUNDLE_DIR_ENV];
  await import("tsx");
  await import("../harness/cli/main.ts");
}
