/**
 * Validates a KCIDB document against the vendored v5.0 JSON Schema with ajv (draft 2020-12 mode:
 * the schema uses $defs) and ajv-formats (uri, date-time, email). ajv is loaded when asked for,
 * so the report command works without it; validation says exactly what to install when it is
 * missing.
 */
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { HilError } from "../../util/errors.ts";

export const KCIDB_SCHEMA_FILE = fileURLToPath(
  new URL("../../test/fixtures/kcidb/kcidb-v05_00.schema.json", import.meta.url),
);
export const AJV_PACKAGES = "ajv@^8.20.0 ajv-formats@^3.0.1";

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

function defaultOf<T>(mod: unknown): T {
  const m = mod as { default?: unknown };
  const d = m.default as { default?: unknown } | undefined;
  return (d?.default ?? d ?? mod) as T;
}

async function load(spec: string): Promise<unknown> {
  try {
    return await import(spec);
  } catch (err) {
    throw new HilError(
      `${spec} is not installed: KCIDB validation needs the dev dependencies ${AJV_PACKAGES}`,
      {
        cause: err,
      },
    );
  }
}

let compiled: Promise<Validate> | undefined;

async function validator(): Promise<Validate> {
  const Ajv = defaultOf<AjvCtor>(await load("ajv/dist/2020.js"));
  const addFormats = defaultOf<AddFormats>(await load("ajv-formats"));
  const schema: unknown = JSON.parse(await readFile(KCIDB_SCHEMA_FILE, "utf8"));
  const ajv = new Ajv({ allErrors: true, strict: true });
  addFormats(ajv);
  return ajv.compile(schema);
}

export async function validateKcidb(doc: unknown): Promise<SchemaCheck> {
  compiled ??= validator();
  let validate: Validate;
  try {
    validate = await compiled;
  } catch (err) {
    compiled = undefined;
    throw err;
  }
  const valid = validate(doc);
  return {
    valid,
    errors: (validate.errors ?? []).map((e) => `${e.instancePath || "/"}: ${e.message ?? "invalid"}`),
  };
}
