// The upstream erdma driver of Debian's linux-source-7.2 on the erdma device model: probe, rdma link,
// ibv_devinfo, verbs object lifecycle against the hardware trace, MTU, remove and re-probe.
import { erdmaGuestTest } from "../support/erdma-guest.ts";

erdmaGuestTest("debian:7.2");
