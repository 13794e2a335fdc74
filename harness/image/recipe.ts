import { fileURLToPath } from "node:url";

/** Bump when anything below, or how the layers are packed, changes: it is part of every image key. */
export const RECIPE_VERSION = "initramfs-2";

/** The Debian suite the guest userspace comes from. */
export const USERSPACE_SUITE = "bookworm";

/**
 * What the guest runs: a shell and tools, an SSH server, rdma-core with its tools and providers.
 * busybox, not busybox-static: the static build's shell runs its own applets before anything on
 * PATH (`ip` would be busybox's, not iproute2's).
 */
export const ROOT_PACKAGES = [
  "busybox",
  "dropbear-bin",
  "libibverbs1",
  "ibverbs-providers",
  "librdmacm1",
  "ibverbs-utils",
  "rdmacm-utils",
  "perftest",
  "iproute2",
] as const;

/** The guest package whose Debian version is the guest's rdma-core version (rdma-core's providers). */
export const RDMA_CORE_PACKAGE = "ibverbs-providers";

/**
 * Packages whose only role is packaging (maintainer scripts, user creation, debconf prompts).
 * A dependency group naming one of them is dropped, and they are never followed.
 */
export const PACKAGING_ONLY = new Set([
  "debconf",
  "cdebconf",
  "perl-base",
  "dpkg",
  "adduser",
  "passwd",
  "init-system-helpers",
  "lsb-base",
  "sysvinit-utils",
  "install-info",
  "readline-common",
  "usrmerge",
  "usr-is-merged",
]);

/**
 * Paths (relative to the tree root) removed after unpacking: documentation, headers, and optional
 * plugins and programs nothing in the guest loads or runs (iconv's gconv; tc's ATM qdisc, which
 * needs libatm1; OpenSSL's engines and providers and Kerberos's plugins, whose libraries no guest
 * program links; rdma-core's rsocket LD_PRELOAD library; iproute2's ARP daemon, the only user of
 * libdb). The libraries they alone needed then go too (DLOPENED_LIBRARIES).
 */
export const PRUNED_PATHS = [
  "usr/lib/x86_64-linux-gnu/tc/q_atm.so",
  "usr/lib/x86_64-linux-gnu/gconv",
  "usr/lib/x86_64-linux-gnu/engines-3",
  "usr/lib/x86_64-linux-gnu/ossl-modules",
  "usr/lib/x86_64-linux-gnu/krb5/plugins",
  "usr/lib/x86_64-linux-gnu/rsocket",
  "usr/sbin/arpd",
  "usr/share/doc",
  "usr/share/man",
  "usr/share/info",
  "usr/share/locale",
  "usr/share/lintian",
  "usr/share/bug",
  "usr/share/bash-completion",
  "usr/share/zsh",
  "usr/include",
];

/** The library directories ld.so searches in the guest; written to /etc/ld.so.conf. */
export const LIBRARY_DIRS = [
  "/lib/x86_64-linux-gnu",
  "/usr/lib/x86_64-linux-gnu",
  "/lib64",
  "/lib",
  "/usr/lib",
];

/**
 * After pruning, the image keeps only the shared libraries some program or plugin in it loads
 * over DT_NEEDED (unused-libraries.ts), and these, which are loaded by name with dlopen: glibc
 * opens libgcc_s for pthread_cancel and pthread_exit's unwinding. Each boot unpacks the image, so
 * every megabyte left out is time saved on every boot.
 */
export const DLOPENED_LIBRARIES = ["libgcc_s.so.1"];

/** Empty directories the init script mounts on or writes into. */
export const SKELETON_DIRS = ["dev", "proc", "sys", "tmp", "run", "root", "etc", "var", "mnt"];

export const INIT_SCRIPT_PATH = fileURLToPath(new URL("../../guest/initramfs/init", import.meta.url));

/** What the image builder runs on the host: apt-get/apt-cache, dpkg-deb, readelf, ldconfig. */
export const IMAGE_HOST_PACKAGES = ["apt", "debian-archive-keyring", "dpkg", "binutils", "libc-bin"] as const;
