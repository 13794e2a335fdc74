// Runs the TypeScript CLI through tsx (no build step), from wherever hil is called. `import("tsx")`
// is resolved from this file, so from the package's own node_modules, not from the working
// directory as `node --import tsx` would be; and tsx reads this package's tsconfig.json, not the
// first one above the working directory (it looks there unless told). Both hold for the processes
// hil starts, which inherit the environment.
import { fileURLToPath } from "node:url";

process.env.TSX_TSCONFIG_PATH = fileURLToPath(new URL("../tsconfig.json", import.meta.url));
await import("tsx");
await import("../harness/cli/main.ts");
