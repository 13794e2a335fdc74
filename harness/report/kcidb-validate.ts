/**
 * Validates a KCIDB document against the vendored v5.0 JSON Schema (kcidb-schema/, see its
 * SOURCE.md) with ajv in draft 2020-12 mode (the schema uses $defs) and ajv-formats (uri,
 * date-time, email). Both are runtime dependencies: `hil report --format kcidb` checks every
 * document it writes.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import ajv2020 from "ajv/dist/2020.js";
import ajvFormats from "ajv-formats";

export const KCIDB_SCHEMA_FILE = fileURLToPath(new URL("./kcidb-schema/v05_00.schema.json", import.meta.url));

export interface SchemaCheck {
  valid: boolean;
  /** "<instance path>: <message>" per error */
  errors: string[];
}

type Validate = ((data: unknown) => boolean) & {
  errors?: Array<{ instancePath: string; message?: string }> | null;
};
interface AjvLike {
  compile(schema: unknown): Validate;
}
type AjvCtor = new (opts: Record<string, unknown>) => AjvLike;
type AddFormats = (ajv: AjvLike) => unknown;

/** ajv and ajv-formats are CommonJS: their default export arrives as the module or under .default. */
function defaultOf<T>(mod: unknown): T {
  const d = (mod as { default?: unknown }).default;
  return (d ?? mod) as T;
}

let compiled: Validate | undefined;

function validator(): Validate {
  if (compiled) return compiled;
  const Ajv = defaultOf<AjvCtor>(ajv2020);
  const ajv = new Ajv({ allErrors: true, strict: true });
  defaultOf<AddFormats>(ajvFormats)(ajv);
  compiled = ajv.compile(JSON.parse(readFileSync(KCIDB_SCHEMA_FILE, "utf8")));
  return compiled;
}

export function validateKcidb(doc: unknown): SchemaCheck {
  const validate = validator();
  const valid = validate(doc);
  return {
    valid,
    errors: (validate.errors ?? []).map((e) => `${e.instancePath || "/"}: ${e.message ?? "invalid"}`),
  };
}
