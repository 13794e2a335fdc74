// How far a queue in ERROR flushes, per behaviour profile (qemu/erdma/flush.ts, the reference):
//   mode STOP    (erdma hardware in 2022): up to the producer index seen when the QP entered ERROR;
//   mode REFLUSH (erdma since Linux 6.2, CMDQ_OPCODE_REFLUSH): as STOP, then up to the indexes the
//                last REFLUSH named (erdma_qp.c erdma_flush_worker sends the driver's sq_pi/rq_pi);
//   mode ALWAYS  (IB 11.4.1.1, C10-42): every WQE posted, up to the queue's producer index.
// A limit behind the consumer index names nothing to flush: the limit becomes the consumer index.
// Work-queue indexes are 16 bits (erdma_hw.h: the SQ/RQ doorbell's PI field, 15:0).
module erdma_flush_limit (
    input  logic [1:0]  mode,          // 0 STOP, 1 REFLUSH, 2 ALWAYS
    input  logic [15:0] wq_pi,
    input  logic [15:0] wq_ci,
    input  logic        error_valid,
    input  logic [15:0] error_pi,
    input  logic        reflush_valid,
    input  logic [15:0] reflush_pi,
    output logic [15:0] limit,
    output logic [1:0]  reason         // 0 pi, 1 error, 2 reflush
);
  localparam logic [1:0] MODE_REFLUSH = 2'd1, MODE_ALWAYS = 2'd2;
  logic [15:0] picked;
  logic [15:0] ahead;

  always_comb begin
    picked = wq_pi;
    reason = 2'd0;
    if (mode != MODE_ALWAYS && error_valid) begin
      picked = error_pi;
      reason = 2'd1;
    end
    if (mode == MODE_REFLUSH && reflush_valid) begin
      picked = reflush_pi;
      reason = 2'd2;
    end
    ahead = picked - wq_ci;
    limit = (ahead >= 16'h8000) ? wq_ci : picked;
  end
endmodule
