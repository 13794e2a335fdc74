/** Whether a string compiles as a JavaScript regular expression (for a schema's refine). */
export function compilesAsRegExp(source: string): boolean {
  try {
    new RegExp(source);
    return true;
  } catch {
    return false;
  }
}
