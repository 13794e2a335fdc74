/** The run directory's sub-folder of traces: traces/<scenario>.jsonl and <scenario>.hw.jsonl. */
export const TRACE_DIR = "traces";
