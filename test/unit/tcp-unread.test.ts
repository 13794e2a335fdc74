// The TCP connections with unread bytes a stuck ULP step's evidence names, read from the kernel's
// /proc/net/tcp and tcp6 text: only established connections, with their addresses decoded.
import t from "tap";
import { describeUnread, parseUnreadSockets } from "../../harness/executor/tcp-unread.ts";

// the layout of net/ipv4/tcp_ipv4.c get_tcp4_sock and net/ipv6/tcp_ipv6.c get_tcp6_sock
const TABLE = [
  "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode",
  "   0: 00000000:1DB0 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1243 1 0 100 0 0 10 0",
  "   1: 0200630A:1DB0 0100630A:9C40 01 00000000:00000048 00:00000000 00000000     0        0 0 3 0",
  "   2: 0200630A:0016 0100630A:9C41 01 00000010:00000000 00:00000000 00000000     0        0 0 3 0",
  "   3: 0200630A:1DB1 0100630A:9C42 08 00000000:00000020 00:00000000 00000000     0        0 0 3 0",
  "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode",
  "   0: 0000000000000000FFFF00000200630A:1DB0 0000000000000000FFFF00000100630A:9C43 01 00000000:00000100 00:00000000 00000000     0        0 0 1 0",
  "   1: 000099FD000000000000000002000000:12B7 000099FD000000000000000001000000:AE87 01 00000000:00000001 00:00000000 00000000     0        0 0 1 0",
].join("\n");

t.test("established connections with bytes in the receive queue, addresses decoded", (t) => {
  t.same(parseUnreadSockets(TABLE), [
    { local: "10.99.0.2:7600", remote: "10.99.0.1:40000", bytes: 72 },
    { local: "[0:0:0:0:0:ffff:a63:2]:7600", remote: "[0:0:0:0:0:ffff:a63:1]:40003", bytes: 256 },
    { local: "[fd99:0:0:0:0:0:0:2]:4791", remote: "[fd99:0:0:0:0:0:0:1]:44679", bytes: 1 },
  ]);
  t.same(parseUnreadSockets(""), [], "no table, nothing");
  t.same(parseUnreadSockets("garbage\n 1: x y 01 00:zz"), [], "a line that is not the table's is ignored");
  t.equal(
    describeUnread("the target", { local: "10.99.0.2:7600", remote: "10.99.0.1:40000", bytes: 72 }),
    "the target's TCP connection 10.99.0.2:7600 from 10.99.0.1:40000 holds 72 unread byte(s)",
  );
  t.end();
});
