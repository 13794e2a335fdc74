// Loaded into every tap test process (package.json tap.node-arg) after tap's coverage hook has
// started that process's own coverage: the processes a test starts record none. They compile the
// project's TypeScript with tsx, which prints each module on one line; tap's test processes compile
// it with esbuild keeping the lines (typescript-hooks.mjs). c8 merges coverage by file URL: two
// compilations of one file mixed their byte offsets, and the source map that won was the order of
// the coverage files on disk (with ts-node in tap's processes, the figure moved by up to 8 points
// between runs of the same code).
process.env._TAPJS_PROCESSINFO_COVERAGE_ = "0";
