import { HilError } from "../../util/errors.ts";

/** The HilError `fn` rejects with; any other error is passed on, and no error at all is `noError`. */
export async function hilErrorOf(fn: () => Promise<unknown>, noError: string): Promise<HilError> {
  try {
    await fn();
  } catch (err) {
    if (err instanceof HilError) return err;
    throw err;
  }
  throw new Error(noError);
}
