/** Whether a file is there and this process may execute it. */
import { accessSync, constants } from "node:fs";

export function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
