// Starts a requester and a responder vroce_rc_peer process joined by a socketpair, each with its
// own environment (devices, faults, time scale), waits for both with a deadline (killing them
// past it, so no process outlives the test), and returns their exit codes and "key=value"
// output. Used by peer_test.cpp.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace vroce_test {

struct PeerResult {
  int exit_code = -1;  // -1: killed at the deadline
  std::string output;
  std::map<std::string, std::string> values;  // the last value of each key

  const std::string& at(const std::string& key) const;
};

struct PairResult {
  PeerResult requester;
  PeerResult responder;
  bool ok() const { return requester.exit_code == 0 && responder.exit_code == 0; }
};

struct PairSpec {
  std::string scenario;
  std::vector<std::string> args;           // passed to both
  std::vector<std::string> requester_env;  // "NAME=value"
  std::vector<std::string> responder_env;
  std::chrono::seconds deadline{120};
  // Prefixes each command (e.g. {"ip", "netns", "exec", "vr-a"}); empty: run directly.
  std::vector<std::string> requester_wrap;
  std::vector<std::string> responder_wrap;
  std::string requester_device = "vrA";
  std::string responder_device = "vrB";
};

PairResult run_pair(const std::string& peer_binary, const PairSpec& spec);

}  // namespace vroce_test
