// Completion generation: the CQE header word with its owner bit, the ring slot it goes to and the
// CQ producer index after it.
//
// CQE header (drivers/infiniband/hw/erdma/erdma_hw.h, Linux 6.12, ERDMA_CQE_HDR_*: OWNER 31,
// OPCODE 23:16, QTYPE 15:8, SYNDROME 7:0); the header is the CQE's first big-endian word and is
// written last (qemu/erdma/cq.ts). The driver takes an entry when owner != !!(ci & depth)
// (erdma_cq.c get_next_valid_cqe), so the device writes owner = 1 on even passes of the ring and
// 0 on odd ones. Indices are free running (32 bits); depth is a power of two, 2**depth_log2.
//
// BUG_OWNER_STUCK (planted, for the oracle to catch): on the second pass the owner bit stays 1.
module erdma_cqe_gen #(
    parameter bit BUG_OWNER_STUCK = 1'b0
) (
    input  logic [31:0] pi,
    input  logic [4:0]  depth_log2,
    input  logic [30:0] hdr_in,
    output logic [31:0] slot,
    output logic [31:0] hdr_out,
    output logic [31:0] next_pi
);
  logic [31:0] depth_mask;
  logic [31:0] pass;
  logic        owner;

  always_comb begin
    depth_mask = (32'd1 << depth_log2) - 32'd1;
    pass = pi >> depth_log2;
    slot = pi & depth_mask;
    owner = ~pass[0];
    if (BUG_OWNER_STUCK && pass == 32'd1) owner = 1'b1;
    hdr_out = {owner, hdr_in[30:0]};
    next_pi = pi + 32'd1;
  end
endmodule
