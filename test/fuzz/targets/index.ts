/** The fuzz targets, and where each keeps its corpus and the reproducers of its findings. */
import { fileURLToPath } from "node:url";
import type { FuzzTarget } from "../target.ts";
import { erdmaTarget } from "./erdma.ts";
import { vfioUserTarget } from "./vfio-user.ts";

export const TARGETS: readonly FuzzTarget[] = [vfioUserTarget, erdmaTarget];

export function fixtureDir(target: string, kind: "corpus" | "crashes"): string {
  return fileURLToPath(new URL(`../../fixtures/fuzz/${target}/${kind}`, import.meta.url));
}
