/** The kernel `hil boot` and `hil run` use when none is given. */
export const DEFAULT_KERNEL = "debian:6.12";
