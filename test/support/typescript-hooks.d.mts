// The types of typescript-hooks.mjs, for the tests that call its hook directly.
type LoadResult = {
  format?: string | null;
  source?: string | ArrayBuffer | Uint8Array;
  shortCircuit?: boolean;
};
type LoadContext = {
  format?: string | null;
  conditions?: string[];
  importAttributes?: Record<string, string>;
};

export function load(
  url: string,
  context: LoadContext,
  nextLoad: (url: string, context: LoadContext) => Promise<LoadResult>,
): Promise<LoadResult>;
