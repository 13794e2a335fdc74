/** Where the scenarios reach their guest: the address and ports the suite, LAVA jobs and `hil scenarios` compile them with. */

/** The guest's address (QEMU user networking); the RDMA device is bound to its NIC. */
export const GUEST_ADDR = "10.0.2.15";
/** the port of the first scenario's QP pair; each next scenario (or repetition) takes the next one */
export const FIRST_PORT = 7600;
