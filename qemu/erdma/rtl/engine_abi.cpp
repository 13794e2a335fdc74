// The C ABI around the verilated queue engine (erdma_queue_engine.sv), loaded by
// qemu/erdma/rtl-engine.ts with koffi. One model per process; each call presents one request and
// clocks the model once: the registered answer is read after the rising edge.
#include <cstdint>
#include <memory>

#include "Verdma_queue_engine.h"
#include "verilated.h"

namespace {
std::unique_ptr<VerilatedContext> context;
std::unique_ptr<Verdma_queue_engine> model;
uint64_t cycles = 0;

void tick() {
  model->clk = 0;
  model->eval();
  model->clk = 1;
  model->eval();
  cycles++;
}

// Presents the request already set on the inputs; 0 when the engine answered.
int request(uint8_t op, uint32_t out[3]) {
  model->req_op = op;
  model->req_valid = 1;
  tick();
  model->req_valid = 0;
  out[0] = model->resp_a;
  out[1] = model->resp_b;
  out[2] = model->resp_c;
  return model->resp_valid ? 0 : -1;
}
}  // namespace

extern "C" {

int qe_open() {
  if (model) return 0;
  context = std::make_unique<VerilatedContext>();
  model = std::make_unique<Verdma_queue_engine>(context.get());
  model->rst_n = 0;
  tick();
  tick();
  model->rst_n = 1;
  return 0;
}

uint64_t qe_cycles() { return cycles; }

// out: header word with the owner bit, slot, next producer index
int qe_cqe(uint32_t pi, uint32_t depth_log2, uint32_t hdr, uint32_t* out) {
  model->cq_pi = pi;
  model->depth_log2 = depth_log2;
  model->cqe_hdr = hdr & 0x7fffffffu;
  return request(0, out);
}

// out[0]: limit 15:0, reason 17:16
int qe_flush_limit(uint32_t mode, uint32_t pi, uint32_t ci, uint32_t error_valid, uint32_t error_pi,
                   uint32_t reflush_valid, uint32_t reflush_pi, uint32_t* out) {
  model->flush_mode = mode;
  model->wq_pi = pi;
  model->wq_ci = ci;
  model->error_valid = error_valid;
  model->error_pi = error_pi;
  model->reflush_valid = reflush_valid;
  model->reflush_pi = reflush_pi;
  return request(1, out);
}

// out[0]: next ci 15:0, taken 23:16, complete 24, active 25, hold 26 (pending: a completion of an
// earlier WQE of the queue is not written yet)
int qe_flush_step(uint32_t ci, uint32_t limit, uint32_t wqebbs, uint32_t depth_log2, uint32_t pending,
                  uint32_t* out) {
  model->wq_ci = ci;
  model->step_limit = limit;
  model->wqebbs = wqebbs;
  model->depth_log2 = depth_log2;
  model->cqe_pending = pending ? 1 : 0;
  return request(2, out);
}
}
