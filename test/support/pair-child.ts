// Started by two-guest-fabric.test.ts: boots a pair of guests on one erdma fabric, prints one JSON
// line with every pid it started once both are up, and waits to be interrupted or killed.
import { bootPair } from "../../harness/boot.ts";
import { bootArtifacts } from "./guest.ts";

const artifacts = await bootArtifacts();
const qemuPids: number[] = [];
const pair = await bootPair(artifacts, {
  memoryMiB: 512,
  onQemuStarted: (_i, info) => qemuPids.push(info.pid),
});
process.stdout.write(`${JSON.stringify({ qemuPids, serverPid: pair.server.pid })}\n`);
await new Promise(() => setInterval(() => {}, 1000));
