/** The message of the error `fn` throws; "" when it returns. */
export function thrownMessage(fn: () => unknown): string {
  try {
    fn();
    return "";
  } catch (err) {
    return (err as Error).message;
  }
}
