// The erdma device's queue engine: completion generation and the flush engine behind one request
// port. The device model (qemu/erdma, TypeScript) keeps PCI, DMA, commands and the data path and,
// per transaction, asks the engine what CQE to write (OP_CQE) and what to flush (OP_FLUSH_LIMIT,
// OP_FLUSH_STEP). A request presented with req_valid is answered on the next rising clock edge:
// the outputs are registered, resp_valid high for one cycle.
module erdma_queue_engine #(
    parameter bit BUG_OWNER_STUCK     = 1'b0,
    parameter bit BUG_FLUSH_SKIP_WRAP = 1'b0,
    parameter bit BUG_FLUSH_BEFORE_SUCCESS = 1'b0
) (
    input  logic        clk,
    input  logic        rst_n,
    input  logic        req_valid,
    input  logic [1:0]  req_op,
    // OP_CQE
    input  logic [31:0] cq_pi,
    input  logic [4:0]  depth_log2,
    input  logic [30:0] cqe_hdr,     // bit 31 (owner) is the engine's
    // OP_FLUSH_LIMIT
    input  logic [1:0]  flush_mode,
    input  logic [15:0] wq_pi,
    input  logic [15:0] wq_ci,
    input  logic        error_valid,
    input  logic [15:0] error_pi,
    input  logic        reflush_valid,
    input  logic [15:0] reflush_pi,
    // OP_FLUSH_STEP (wq_ci, depth_log2 shared)
    input  logic [15:0] step_limit,
    input  logic [7:0]  wqebbs,
    input  logic        cqe_pending, // a completion of an earlier WQE of the queue is not written yet
    // the answer
    output logic        resp_valid,
    output logic [31:0] resp_a,
    output logic [31:0] resp_b,
    output logic [31:0] resp_c
);
  localparam logic [1:0] OP_CQE = 2'd0, OP_FLUSH_LIMIT = 2'd1, OP_FLUSH_STEP = 2'd2;

  logic [31:0] cqe_slot, cqe_hdr_out, cqe_next_pi;
  erdma_cqe_gen #(
      .BUG_OWNER_STUCK(BUG_OWNER_STUCK)
  ) cqe_gen (
      .pi(cq_pi),
      .depth_log2(depth_log2),
      .hdr_in(cqe_hdr),
      .slot(cqe_slot),
      .hdr_out(cqe_hdr_out),
      .next_pi(cqe_next_pi)
  );

  logic [15:0] limit;
  logic [1:0]  reason;
  erdma_flush_limit flush_limit (
      .mode(flush_mode),
      .wq_pi(wq_pi),
      .wq_ci(wq_ci),
      .error_valid(error_valid),
      .error_pi(error_pi),
      .reflush_valid(reflush_valid),
      .reflush_pi(reflush_pi),
      .limit(limit),
      .reason(reason)
  );

  logic        step_active, step_complete, step_hold;
  logic [7:0]  step_taken;
  logic [15:0] step_next;
  erdma_flush_step #(
      .BUG_FLUSH_SKIP_WRAP(BUG_FLUSH_SKIP_WRAP),
      .BUG_FLUSH_BEFORE_SUCCESS(BUG_FLUSH_BEFORE_SUCCESS)
  ) flush_step (
      .ci(wq_ci),
      .limit(step_limit),
      .wqebbs(wqebbs),
      .depth_log2(depth_log2),
      .cqe_pending(cqe_pending),
      .active(step_active),
      .hold(step_hold),
      .taken(step_taken),
      .next_ci(step_next),
      .complete(step_complete)
  );

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      resp_valid <= 1'b0;
      resp_a <= 32'd0;
      resp_b <= 32'd0;
      resp_c <= 32'd0;
    end else begin
      resp_valid <= req_valid;
      if (req_valid) begin
        case (req_op)
          OP_CQE: begin
            resp_a <= cqe_hdr_out;
            resp_b <= cqe_slot;
            resp_c <= cqe_next_pi;
          end
          OP_FLUSH_LIMIT: begin
            resp_a <= {14'd0, reason, limit};
            resp_b <= 32'd0;
            resp_c <= 32'd0;
          end
          OP_FLUSH_STEP: begin
            resp_a <= {5'd0, step_hold, step_active, step_complete, step_taken, step_next};
            resp_b <= 32'd0;
            resp_c <= 32'd0;
          end
          default: begin
            resp_a <= 32'd0;
            resp_b <= 32'd0;
            resp_c <= 32'd0;
          end
        endcase
      end
    end
  end
endmodule
