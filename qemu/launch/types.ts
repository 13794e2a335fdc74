/** A QEMU binary the project can use, and where it came from. */
export interface QemuInstall {
  binary: string;
  version: string;
  origin: "HIL_QEMU" | "PATH" | "built";
  /** -L directories for firmware (SeaBIOS, option ROMs) */
  firmwareDirs: string[];
}

export interface CommandResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}
