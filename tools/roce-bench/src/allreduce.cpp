// Ring all-reduce over the plugin.
#include "allreduce.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "errors.h"
#include "measure_region.h"
#include "p2p_modes.h"
#include "patterns.h"
#include "poller.h"
#include "rendezvous.h"
#include "ring_schedule.h"

namespace roce::bench {
namespace {

using Clock = std::chrono::steady_clock;

// A request in flight and what it is for.
struct Flight {
  void* request = nullptr;
  void* flush = nullptr;
  int op = -1;
  int staging_slot = -1;
};

}  // namespace

RingAllReduce::RingAllReduce(NetPlugin& plugin, Rendezvous& rendezvous, const Options& options,
                             const NetProperties& props)
    : plugin_(plugin),
      rendezvous_(rendezvous),
      options_(options),
      rank_(rendezvous.rank()),
      nranks_(rendezvous.nranks()),
      dtype_(options.dtype),
      elem_(dtype_bytes(options.dtype)),
      value_mask_(allreduce_value_mask(options.dtype, rendezvous.nranks())),
      slice_elems_(options.slice_bytes / dtype_bytes(options.dtype)),
      window_(options.window) {
  const std::size_t staging_bytes = static_cast<std::size_t>(window_) * options.slice_bytes;
  input_ = options.cuda ? Buffer::cuda(options.max_bytes) : Buffer::host(options.max_bytes);
  output_ = options.cuda ? Buffer::cuda(options.max_bytes) : Buffer::host(options.max_bytes);
  staging_ = options.cuda ? Buffer::cuda(staging_bytes) : Buffer::host(staging_bytes);
  const int next = (rank_ + 1) % nranks_;
  const int prev = (rank_ + nranks_ - 1) % nranks_;
  comms_ = connect_ring(plugin, rendezvous, options.dev, next, prev, options.timeout_s);
  try {
    std::string how;
    input_send_mh_ = register_buffer(plugin, comms_.send_comm, input_, props, options.dmabuf, &how);
    output_send_mh_ =
        register_buffer(plugin, comms_.send_comm, output_, props, options.dmabuf, &how);
    output_recv_mh_ =
        register_buffer(plugin, comms_.recv_comm, output_, props, options.dmabuf, &how);
    staging_recv_mh_ =
        register_buffer(plugin, comms_.recv_comm, staging_, props, options.dmabuf, &how);
    registration_ = how;
    flush_ = flush_needed(output_, props, options.flush);
  } catch (...) {
    release();
    throw;
  }
}

RingAllReduce::~RingAllReduce() {
  release();
}

void RingAllReduce::release() noexcept {
  try {
    if (input_send_mh_ != nullptr) {
      plugin_.dereg_mr(comms_.send_comm, input_send_mh_);
      input_send_mh_ = nullptr;
    }
    if (output_send_mh_ != nullptr) {
      plugin_.dereg_mr(comms_.send_comm, output_send_mh_);
      output_send_mh_ = nullptr;
    }
    if (output_recv_mh_ != nullptr) {
      plugin_.dereg_mr(comms_.recv_comm, output_recv_mh_);
      output_recv_mh_ = nullptr;
    }
    if (staging_recv_mh_ != nullptr) {
      plugin_.dereg_mr(comms_.recv_comm, staging_recv_mh_);
      staging_recv_mh_ = nullptr;
    }
    close_comms(plugin_, comms_);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "roce-bench: rank %d: closing the all-reduce comms: %s\n", rank_,
                 e.what());
  }
}

void RingAllReduce::plan(std::size_t count) {
  if (count == planned_count_) {
    return;
  }
  sends_.clear();
  recvs_.clear();
  std::vector<int> first_recv_of_step;
  for (int t = 0; t < ring_steps(nranks_); ++t) {
    const RingStep st = ring_step(rank_, nranks_, t);
    const ElementRange recv_chunk = ring_chunk(count, nranks_, st.recv_chunk);
    first_recv_of_step.push_back(static_cast<int>(recvs_.size()));
    for (std::size_t k = 0; k < slice_count(recv_chunk.count, slice_elems_); ++k) {
      const ElementRange s = slice_of(recv_chunk, slice_elems_, k);
      recvs_.push_back({s.offset, s.count, st.reduce});
    }
    const ElementRange send_chunk = ring_chunk(count, nranks_, st.send_chunk);
    for (std::size_t k = 0; k < slice_count(send_chunk.count, slice_elems_); ++k) {
      const ElementRange s = slice_of(send_chunk, slice_elems_, k);
      // The chunk sent at step t is the one received at step t-1: forward slice k once it is in.
      const int depends =
          t == 0 ? -1 : first_recv_of_step[static_cast<std::size_t>(t - 1)] + static_cast<int>(k);
      sends_.push_back({t, s.offset, s.count, depends});
    }
  }
  recv_done_.assign(recvs_.size(), 0);
  planned_count_ = count;
}

void RingAllReduce::complete_recv(int index, int staging_slot) {
  const RecvOp& op = recvs_[static_cast<std::size_t>(index)];
  if (op.reduce) {
    const std::size_t staging_at = static_cast<std::size_t>(staging_slot) * slice_elems_;
    if (corrupt_next_) {
      corrupt_next_ = false;
      corrupt_word(staging_, staging_at * elem_);
    }
    add_elements(dtype_, output_, op.offset, input_, op.offset, staging_, staging_at, op.count);
  }
  recv_done_[static_cast<std::size_t>(index)] = 1;
}

void RingAllReduce::run(std::size_t count) {
  plan(count);
  std::fill(recv_done_.begin(), recv_done_.end(), 0);
  const int prev = (rank_ + nranks_ - 1) % nranks_;
  const auto nsend = static_cast<int>(sends_.size());
  const auto nrecv = static_cast<int>(recvs_.size());
  std::vector<Flight> send_flights(static_cast<std::size_t>(window_));
  std::vector<Flight> recv_flights(static_cast<std::size_t>(window_));
  int send_posted = 0;
  int send_done = 0;
  int recv_posted = 0;
  int recv_done = 0;
  unsigned irecv_calls = 0;
  Poller poller(options_.timeout_s, options_.poll_sleep_us, &rendezvous_, options_.poll);
  const std::size_t bytes = count * elem_;

  while (send_done < nsend || recv_done < nrecv) {
    bool advanced = false;
    // Receives first: each posts a clear-to-send that the previous rank's isend waits for.
    while (recv_posted < nrecv && recv_posted - recv_done < window_) {
      const RecvOp& op = recvs_[static_cast<std::size_t>(recv_posted)];
      const int slot = recv_posted % window_;
      Buffer& target = op.reduce ? staging_ : output_;
      const std::size_t at = op.reduce ? static_cast<std::size_t>(slot) * slice_elems_ : op.offset;
      void* mh = op.reduce ? staging_recv_mh_ : output_recv_mh_;
      const bool ll_hint = (irecv_calls++ & 1U) == 1U;
      void* request = plugin_.irecv(comms_.recv_comm, target.bytes() + at * elem_, op.count * elem_,
                                    prev, mh, ll_hint);
      if (request == nullptr) {
        break;
      }
      recv_flights[static_cast<std::size_t>(slot)] = {request, nullptr, recv_posted, slot};
      ++recv_posted;
      advanced = true;
    }
    while (send_posted < nsend && send_posted - send_done < window_) {
      const SendOp& op = sends_[static_cast<std::size_t>(send_posted)];
      if (op.depends_on >= 0 && recv_done_[static_cast<std::size_t>(op.depends_on)] == 0) {
        break;
      }
      Buffer& source = op.step == 0 ? input_ : output_;
      void* mh = op.step == 0 ? input_send_mh_ : output_send_mh_;
      void* request = plugin_.isend(comms_.send_comm, source.bytes() + op.offset * elem_,
                                    op.count * elem_, rank_, mh);
      if (request == nullptr) {
        break;
      }
      send_flights[static_cast<std::size_t>(send_posted % window_)] = {request, nullptr,
                                                                       send_posted, -1};
      ++send_posted;
      advanced = true;
    }
    if (recv_done < recv_posted) {
      Flight& f = recv_flights[static_cast<std::size_t>(recv_done % window_)];
      const RecvOp& op = recvs_[static_cast<std::size_t>(f.op)];
      if (f.flush == nullptr) {
        int size = -1;
        if (plugin_.test(f.request, &size)) {
          const std::size_t expected = op.count * elem_;
          if (size < 0 || static_cast<std::size_t>(size) != expected) {
            throw BenchError("allreduce " + std::to_string(bytes) + " B: plugin test reported " +
                             std::to_string(size) + " bytes for a " + std::to_string(expected) +
                             "-byte slice from rank " + std::to_string(prev));
          }
          if (flush_) {
            Buffer& target = op.reduce ? staging_ : output_;
            const std::size_t at =
                op.reduce ? static_cast<std::size_t>(f.staging_slot) * slice_elems_ : op.offset;
            f.flush = plugin_.iflush(comms_.recv_comm, target.bytes() + at * elem_, size,
                                     op.reduce ? staging_recv_mh_ : output_recv_mh_);
          }
          if (f.flush == nullptr) {
            complete_recv(f.op, f.staging_slot);
            ++recv_done;
          }
          advanced = true;
        }
      } else if (plugin_.test(f.flush, nullptr)) {
        f.flush = nullptr;
        complete_recv(f.op, f.staging_slot);
        ++recv_done;
        advanced = true;
      }
    }
    if (send_done < send_posted) {
      Flight& f = send_flights[static_cast<std::size_t>(send_done % window_)];
      int size = -1;
      if (plugin_.test(f.request, &size)) {
        ++send_done;
        advanced = true;
      }
    }
    if (advanced) {
      poller.progress();
    } else {
      poller.idle([&] {
        return "allreduce " + std::to_string(bytes) + " B: waiting on rank " +
               std::to_string(prev) + " or " + std::to_string((rank_ + 1) % nranks_) + " (" +
               std::to_string(recv_done) + "/" + std::to_string(nrecv) + " slices in, " +
               std::to_string(send_done) + "/" + std::to_string(nsend) + " out)";
      });
    }
  }
}

void RingAllReduce::prepare(std::size_t count, std::uint64_t seed) {
  std::vector<float> values(count);
  fill_allreduce_input(values, seed, rank_, value_mask_);
  std::vector<std::byte> encoded(count * elem_);
  for (std::size_t i = 0; i < count; ++i) {
    store_element(dtype_, encoded.data(), i, values[i]);
  }
  input_.write(0, encoded.data(), encoded.size());
  output_.zero();
}

std::uint64_t RingAllReduce::count_wrong(std::size_t count, std::uint64_t seed) {
  std::vector<std::byte> encoded(count * elem_);
  output_.read(0, encoded.data(), encoded.size());
  std::vector<float> values(count);
  for (std::size_t i = 0; i < count; ++i) {
    values[i] = load_element(dtype_, encoded.data(), i);
  }
  return count_allreduce_errors(values, seed, nranks_, value_mask_);
}

Row RingAllReduce::measure(const SizeStep& step, std::uint64_t seed) {
  const std::size_t count = step.bytes / elem_;
  prepare(count, seed ^ 0x5a5a);
  for (int i = 0; i < step.warmup; ++i) {
    run(count);
  }
  rendezvous_.barrier();
  plugin_.timed_region(true);
  region_begin();
  const auto t0 = Clock::now();
  for (int i = 0; i < step.iters; ++i) {
    run(count);
  }
  region_end("timed");
  plugin_.timed_region(false);
  const double mean_us =
      std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / step.iters;

  // Verified run on fresh inputs into a zeroed output, so nothing stale can pass.
  prepare(count, seed);
  rendezvous_.barrier();
  arm_corruption();
  run(count);
  corrupt_next_ = false;
  const std::uint64_t wrong = count_wrong(count, seed);

  struct Sample {
    double mean_us;
    std::uint64_t wrong;
  } mine{mean_us, wrong};
  const auto all =
      rendezvous_.allgather(std::string_view(reinterpret_cast<const char*>(&mine), sizeof(mine)));
  Row row;
  row.bytes = step.bytes;
  row.count = count;
  row.iters = step.iters;
  for (const auto& blob : all) {
    Sample s{};
    std::memcpy(&s, blob.data(), std::min(blob.size(), sizeof(s)));
    row.wrong += s.wrong;
    row.time_us = std::max(row.time_us, s.mean_us);
  }
  row.algbw = gbps(row.bytes, row.time_us);
  row.busbw = row.algbw * 2.0 * (nranks_ - 1) / nranks_;
  return row;
}

}  // namespace roce::bench
