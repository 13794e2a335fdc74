// One step of the flush engine: the WQE at the consumer index gets a flush completion and the
// consumer index moves past its blocks. An SQE spans as many 32-byte WQEBBs as its header says
// (erdma_hw.h ERDMA_SQE_HDR_WQEBB_CNT_MASK holds the count minus one; qemu/erdma/wqe.ts sqeWqebbs),
// so the index advances by that count, never past the limit (a header claiming blocks past the
// limit ends the flush there). An RQE is one block.
//
// The flush CQE must not overtake a completion of an earlier WQE of the same queue that is still on
// its way to the CQ (IBTA Vol 1 10.8: an RC queue's WQEs complete in the order posted; the Linux
// drain relies on it, its marker completes last): while cqe_pending is high the step holds (hold:
// nothing taken, no completion) and the device asks again once that completion is written.
//
// BUG_FLUSH_SKIP_WRAP (planted, for the oracle to catch): the WQE whose blocks reach the end of the
// ring (the last one before the ring wraps) is stepped over without a flush completion.
// BUG_FLUSH_BEFORE_SUCCESS (planted): the step ignores cqe_pending, so the flush CQE of a later WQE
// reaches the CQ ahead of an earlier WQE's success completion.
module erdma_flush_step #(
    parameter bit BUG_FLUSH_SKIP_WRAP      = 1'b0,
    parameter bit BUG_FLUSH_BEFORE_SUCCESS = 1'b0
) (
    input  logic [15:0] ci,
    input  logic [15:0] limit,
    input  logic [7:0]  wqebbs,
    input  logic [4:0]  depth_log2,
    input  logic        cqe_pending,
    output logic        active,
    output logic        hold,
    output logic [7:0]  taken,
    output logic [15:0] next_ci,
    output logic        complete
);
  logic [15:0] left;
  logic [16:0] slot_end;
  logic [16:0] depth;

  always_comb begin
    left = limit - ci;
    active = left != 16'd0;
    hold = active && cqe_pending && !BUG_FLUSH_BEFORE_SUCCESS;
    taken = 8'd0;
    if (active && !hold) taken = ({8'd0, wqebbs} < left) ? wqebbs : left[7:0];
    next_ci = ci + {8'd0, taken};
    depth = 17'd1 << depth_log2;
    slot_end = {1'b0, ci & (depth[15:0] - 16'd1)} + {9'd0, taken};
    complete = active && !hold;
    if (BUG_FLUSH_SKIP_WRAP && slot_end >= depth) complete = 1'b0;
  end
endmodule
