// pingpong, bw and bibw over an Endpoint.
#include "p2p_modes.h"

#include <algorithm>
#include <cstring>

#include "errors.h"
#include "measure_region.h"
#include "patterns.h"
#include "rendezvous.h"

namespace roce::bench {
namespace {

double micros(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}

struct Sample {
  double elapsed_us;
  std::uint64_t wrong;
};

// Every rank's (elapsed, wrong) pair.
std::vector<Sample> gather(Rendezvous& rendezvous, Sample mine) {
  const auto all =
      rendezvous.allgather(std::string_view(reinterpret_cast<const char*>(&mine), sizeof(mine)));
  std::vector<Sample> out;
  for (const auto& blob : all) {
    Sample s{};
    if (blob.size() != sizeof(s)) {
      throw BenchError("malformed result exchange between ranks");
    }
    std::memcpy(&s, blob.data(), sizeof(s));
    out.push_back(s);
  }
  return out;
}

}  // namespace

P2pMeasurement::P2pMeasurement(Endpoint& ep, Rendezvous& rendezvous, const Options& options,
                               const SizeStep& step, std::uint64_t seed)
    : ep_(ep),
      rendezvous_(rendezvous),
      options_(options),
      step_(step),
      seed_(seed),
      rank_(rendezvous.rank()),
      poller_(options.timeout_s, options.poll_sleep_us, &rendezvous, options.poll),
      window_(slots_for(ep.capacity(), step.bytes, options.window)),
      sending_(options.mode == Mode::BiBandwidth || rendezvous.rank() == 0),
      receiving_(options.mode == Mode::BiBandwidth || rendezvous.rank() == 1) {
  if (step.bytes > ep.capacity()) {
    throw BenchError("internal: message larger than the endpoint's buffers");
  }
  if (options.mode == Mode::AllReduce) {
    throw BenchError("internal: all-reduce is not a point-to-point mode");
  }
}

std::string P2pMeasurement::where(const char* what) const {
  return std::string(mode_name(options_.mode)) + " " + std::to_string(step_.bytes) + " B (" +
         std::string(ep_.label()) + "): " + what;
}

void P2pMeasurement::send(int slot, Ticket& ticket, const char* what) {
  while (!ep_.post_send(slot, step_.bytes, ticket)) {
    poller_.idle([&] { return where(what); });
  }
  poller_.progress();
}

void P2pMeasurement::recv(int slot, Ticket& ticket, const char* what) {
  while (!ep_.post_recv(slot, step_.bytes, ticket)) {
    poller_.idle([&] { return where(what); });
  }
  poller_.progress();
}

void P2pMeasurement::wait(Ticket& ticket, const char* what) {
  while (!ep_.test(ticket)) {
    poller_.idle([&] { return where(what); });
  }
  poller_.progress();
}

void P2pMeasurement::wait_both(Ticket& a, Ticket& b, const char* what) {
  bool a_done = false;
  bool b_done = false;
  while (!(a_done && b_done)) {
    bool advanced = false;
    if (!a_done && ep_.test(a)) {
      a_done = advanced = true;
    }
    if (!b_done && ep_.test(b)) {
      b_done = advanced = true;
    }
    if (advanced) {
      poller_.progress();
    } else {
      poller_.idle([&] { return where(what); });
    }
  }
}

void P2pMeasurement::fill_slot(int slot, std::uint64_t seed) {
  std::vector<std::uint32_t> data(words());
  fill_message(data, seed);
  ep_.send_buffer().write(slot_offset(slot, step_.bytes), data.data(), step_.bytes);
}

std::uint64_t P2pMeasurement::check_slot(int slot, std::uint64_t seed) {
  const std::size_t offset = slot_offset(slot, step_.bytes);
  if (options_.inject_corruption && rank_ == rendezvous_.nranks() - 1 && slot == 0) {
    corrupt_word(ep_.recv_buffer(), offset + (words() / 2) * sizeof(std::uint32_t));
  }
  std::vector<std::uint32_t> data(words());
  ep_.recv_buffer().read(offset, data.data(), step_.bytes);
  return count_message_errors(data, seed);
}

void P2pMeasurement::pingpong(int count, bool record) {
  // Both ranks keep two receives posted ahead, so the receive for the next round trip is never
  // on the critical path: the plugin's clear-to-send for it is already out, and raw RC never
  // meets a missing receive WQE (an RNR NAK and its timer would measure the RNR path instead).
  constexpr int kAhead = 2;
  Ticket s;
  Ticket rs[kAhead];
  for (int i = 0; i < kAhead && i < count; ++i) {
    recv(0, rs[i], "posting the first receives");
  }
  // No message leaves before the peer's first receives are posted.
  rendezvous_.barrier();
  for (int i = 0; i < count; ++i) {
    Ticket& ri = rs[i % kAhead];
    if (rank_ == 0) {
      const auto t0 = Clock::now();
      send(0, s, "posting the ping (waiting for rank 1's clear-to-send)");
      wait_both(s, ri, "waiting for the reply from rank 1");
      if (record) {
        rtts_.push_back(micros(Clock::now() - t0));
      }
      if (i + kAhead < count) {
        recv(0, ri, "posting a receive");
      }
    } else {
      wait(ri, "waiting for the ping from rank 0");
      send(0, s, "posting the reply (waiting for rank 0's clear-to-send)");
      if (i + kAhead < count) {
        recv(0, ri, "posting a receive");
      }
      wait(s, "waiting for the reply's send to complete");
    }
  }
}

P2pMeasurement::Clock::time_point P2pMeasurement::stream(int count) {
  const int depth = ep_.receive_depth(window_);
  std::vector<Ticket> sends(static_cast<std::size_t>(window_));
  std::vector<Ticket> recvs(static_cast<std::size_t>(depth));
  int sent_posted = 0;
  int sent_done = 0;
  int recv_posted = 0;
  int recv_done = 0;
  const int send_total = sending_ ? count : 0;
  const int recv_total = receiving_ ? count : 0;
  // Every receive that fits is posted before any message leaves (barrier), as NCCL's receiver
  // is ready before its peer sends; raw RC would otherwise start with RNR NAKs.
  while (recv_posted < recv_total && recv_posted < depth) {
    recv(recv_posted % window_, recvs[static_cast<std::size_t>(recv_posted % depth)],
         "posting the first receives");
    ++recv_posted;
  }
  rendezvous_.barrier();
  const auto started = Clock::now();
  while (sent_done < send_total || recv_done < recv_total) {
    bool advanced = false;
    // Receives first: they carry the clear-to-send the peer's isend waits for.
    while (recv_posted < recv_total && recv_posted - recv_done < depth) {
      if (!ep_.post_recv(recv_posted % window_, step_.bytes,
                         recvs[static_cast<std::size_t>(recv_posted % depth)])) {
        break;
      }
      ++recv_posted;
      advanced = true;
    }
    while (sent_posted < send_total && sent_posted - sent_done < window_) {
      const int slot = sent_posted % window_;
      if (!ep_.post_send(slot, step_.bytes, sends[static_cast<std::size_t>(slot)])) {
        break;
      }
      ++sent_posted;
      advanced = true;
    }
    // As NCCL's proxy does, test the oldest outstanding request of each direction.
    if (recv_done < recv_posted && ep_.test(recvs[static_cast<std::size_t>(recv_done % depth)])) {
      ++recv_done;
      advanced = true;
    }
    if (sent_done < sent_posted && ep_.test(sends[static_cast<std::size_t>(sent_done % window_)])) {
      ++sent_done;
      advanced = true;
    }
    if (advanced) {
      poller_.progress();
    } else {
      poller_.idle(
          [&] { return where(sent_done < send_total ? "streaming sends" : "streaming receives"); });
    }
  }
  return started;
}

void P2pMeasurement::warmup() {
  if (options_.mode == Mode::PingPong) {
    pingpong(step_.warmup, false);
  } else {
    stream(step_.warmup);
  }
}

void P2pMeasurement::timed(int iters) {
  if (iters <= 0) {
    return;
  }
  timed_iters_ += iters;
  ep_.timed_region(true);
  region_begin();
  if (options_.mode == Mode::PingPong) {
    pingpong(iters, rank_ == 0);
  } else {
    const auto t0 = stream(iters);
    elapsed_us_ += micros(Clock::now() - t0);
  }
  region_end("timed");
  ep_.timed_region(false);
}

Row P2pMeasurement::finish() {
  std::uint64_t wrong = 0;
  if (options_.mode == Mode::PingPong) {
    // Rank 0 sends pattern A, rank 1 checks it and answers with pattern B.
    const std::uint64_t seed_a = seed_ * 4;
    const std::uint64_t seed_b = seed_ * 4 + 1;
    Ticket s;
    Ticket r;
    fill_slot(0, rank_ == 0 ? seed_a : seed_b);
    recv(0, r, "verification: posting the receive");
    rendezvous_.barrier();
    if (rank_ == 0) {
      send(0, s, "verification: posting the send");
      wait_both(s, r, "verification: waiting for the reply");
      wrong = check_slot(0, seed_b);
    } else {
      wait(r, "verification: waiting for rank 0's message");
      wrong = check_slot(0, seed_a);
      send(0, s, "verification: posting the reply");
      wait(s, "verification: waiting for the reply's send");
    }
  } else {
    // One window of messages, each slot with its own pattern.
    const int batch = window_;
    const std::uint64_t base = seed_ * 64;
    if (sending_) {
      for (int slot = 0; slot < batch; ++slot) {
        fill_slot(slot, base + static_cast<std::uint64_t>(rank_ * kMaxWindow + slot));
      }
    }
    stream(batch);
    if (receiving_) {
      const int peer = 1 - rank_;
      for (int slot = 0; slot < batch; ++slot) {
        wrong += check_slot(slot, base + static_cast<std::uint64_t>(peer * kMaxWindow + slot));
      }
    }
  }

  const auto all = gather(rendezvous_, Sample{elapsed_us_, wrong});
  Row row;
  row.bytes = step_.bytes;
  row.count = step_.bytes / sizeof(float);
  row.iters = timed_iters_;
  double slowest = 0;
  for (const auto& sample : all) {
    row.wrong += sample.wrong;
    slowest = std::max(slowest, sample.elapsed_us);
  }
  if (options_.mode == Mode::PingPong) {
    if (rank_ == 0) {
      row.has_rtt = true;
      row.rtt_us = percentiles(rtts_);
      row.time_us = row.rtt_us.p50 / 2;
    }
  } else if (timed_iters_ > 0) {
    row.time_us = slowest / timed_iters_;
  }
  row.algbw = gbps(row.bytes, row.time_us);
  row.busbw = row.algbw;
  return row;
}

void corrupt_word(Buffer& buffer, std::size_t offset) {
  std::uint32_t word = 0;
  buffer.read(offset, &word, sizeof(word));
  word ^= 0x00010000U;
  buffer.write(offset, &word, sizeof(word));
}

Row run_p2p(Endpoint& endpoint, Rendezvous& rendezvous, const Options& options,
            const SizeStep& step, std::uint64_t seed) {
  P2pMeasurement m(endpoint, rendezvous, options, step, seed);
  m.warmup();
  m.timed(step.iters);
  return m.finish();
}

}  // namespace roce::bench
