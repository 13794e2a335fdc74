// Loaded into every tap test process (package.json tap.node-arg) after tap's coverage hook has
// started that process's own coverage: the processes a test starts record none. They compile the
// project's TypeScript with tsx, tap's test processes with ts-node, and c8 merges coverage by file
// URL: two compilations of one file mixed their byte offsets, and the source map that won was the
// order of the coverage files on disk. The figure moved by up to 8 points between runs of the same
// code (qemu/erdma dropped out of the table in one run of two).
process.env._TAPJS_PROCESSINFO_COVERAGE_ = "0";
