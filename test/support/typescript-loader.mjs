// Loaded into tap's test processes (package.json tap.node-arg) in place of tap's TypeScript plugin.
import { register } from "node:module";

register("./typescript-hooks.mjs", import.meta.url);
