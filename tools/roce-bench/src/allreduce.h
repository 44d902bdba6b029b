// The ring all-reduce through the plugin: each rank sends to rank+1 and receives from rank-1 over
// one send comm and one recv comm; a sum (fp32, fp16 or bf16: --dtype) runs as reduce-scatter
// then all-gather (2(n-1)
// steps), each chunk cut into slices that are pipelined with up to --window requests in flight
// per comm, the way NCCL's proxy keeps NCCL_STEPS slices outstanding. A slice is sent on as soon
// as the slice it depends on has arrived (and been reduced). Inputs are read from the input
// buffer, results land in the output buffer (out of place), reduce-scatter arrivals go through a
// staging ring. The check run verifies every element against the exact expected sum.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "buffer.h"
#include "dtype.h"
#include "net_plugin.h"
#include "options.h"
#include "plugin_comms.h"
#include "results.h"
#include "sweep.h"

namespace roce::bench {

class Rendezvous;

class RingAllReduce {
 public:
  // Collective: every rank constructs it together. Buffers hold options.max_bytes.
  RingAllReduce(NetPlugin& plugin, Rendezvous& rendezvous, const Options& options,
                const NetProperties& props);
  ~RingAllReduce();
  RingAllReduce(const RingAllReduce&) = delete;
  RingAllReduce& operator=(const RingAllReduce&) = delete;

  // Warm-up, timed iterations and one verified run; the Row is complete on rank 0.
  Row measure(const SizeStep& step, std::uint64_t seed);

  // The pieces measure() is made of, for callers that time a sequence of their own (tp mode).
  // Fills the first `count` input elements with this rank's share of the check pattern `seed`
  // and zeroes the output.
  void prepare(std::size_t count, std::uint64_t seed);
  // One all-reduce of `count` elements from the input to the output buffer.
  void run(std::size_t count);
  // With --inject-corruption, the last rank flips one element of its next reduced receive.
  void arm_corruption() { corrupt_next_ = options_.inject_corruption && rank_ == nranks_ - 1; }
  // Elements of the output that differ from the exact sum of pattern `seed` (this rank's view).
  std::uint64_t count_wrong(std::size_t count, std::uint64_t seed);

  DType dtype() const { return dtype_; }
  std::size_t element_bytes() const { return elem_; }

  const std::string& registration() const { return registration_; }
  bool flushes() const { return flush_; }

 private:
  struct SendOp {
    int step;
    std::size_t offset;  // elements
    std::size_t count;
    int depends_on;  // index of the receive this send forwards; -1 for step 0
  };
  struct RecvOp {
    std::size_t offset;
    std::size_t count;
    bool reduce;
  };
  void plan(std::size_t count);
  void complete_recv(int index, int staging_slot);
  void release() noexcept;

  NetPlugin& plugin_;
  Rendezvous& rendezvous_;
  const Options& options_;
  int rank_;
  int nranks_;
  DType dtype_;
  std::size_t elem_;  // bytes per element
  std::uint32_t value_mask_;
  std::size_t slice_elems_;
  int window_;
  Buffer input_;
  Buffer output_;
  Buffer staging_;
  PluginComms comms_;
  void* input_send_mh_ = nullptr;
  void* output_send_mh_ = nullptr;
  void* output_recv_mh_ = nullptr;
  void* staging_recv_mh_ = nullptr;
  std::string registration_;
  bool flush_ = false;
  bool corrupt_next_ = false;

  std::size_t planned_count_ = static_cast<std::size_t>(-1);
  std::vector<SendOp> sends_;
  std::vector<RecvOp> recvs_;
  std::vector<char> recv_done_;
};

}  // namespace roce::bench
