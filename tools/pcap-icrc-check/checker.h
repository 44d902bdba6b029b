// Classifies every frame of a capture: RoCEv2 packets (UDP destination port 4791) get their
// ICRC validated over the captured IP/UDP headers and their structure parsed; the rest is
// counted. The result is a Summary the report prints as text or JSON.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "capture_reader.h"

namespace vroce::pcapcheck {

struct Problem {
  std::uint64_t frame = 0;
  std::string kind;  // "invalid ICRC", "unverifiable", "structure"
  std::string detail;
  int opcode = -1;  // -1 when the BTH was not captured
  std::uint32_t dest_qp = 0;
  std::uint32_t psn = 0;
};

struct Summary {
  std::string format;
  std::set<std::uint32_t> link_types;
  std::uint64_t frames = 0;
  std::uint64_t non_ip = 0;        // frames that carry no IP packet (ARP, LLDP, ...)
  std::uint64_t other_ip = 0;      // IP packets that are not UDP to port 4791
  std::uint64_t roce = 0;          // UDP to port 4791
  std::uint64_t valid = 0;         // ICRC matches
  std::uint64_t invalid = 0;       // ICRC does not match
  std::uint64_t unverifiable = 0;  // cut by the snap length, fragmented, or too short for an ICRC
  std::uint64_t structure_errors = 0;  // valid ICRC but the transport headers do not parse
  std::uint64_t ipv4 = 0;
  std::uint64_t ipv6 = 0;
  std::map<int, std::uint64_t> opcodes;                   // BTH opcode -> packets
  std::map<std::uint8_t, std::uint64_t> traffic_classes;  // TOS / traffic class byte -> packets
  std::vector<Problem> problems;                          // the first max_problems
  std::uint64_t problems_omitted = 0;
};

class Checker {
 public:
  explicit Checker(std::size_t max_problems) : max_problems_(max_problems) {}

  // Fails when the frame's link type is not one this tool reads.
  Status add(const Frame& frame);
  Summary& summary() { return summary_; }

 private:
  void problem(Problem p);
  void check_roce(const Frame& frame, std::span<const std::uint8_t> ip);

  std::size_t max_problems_;
  Summary summary_;
};

}  // namespace vroce::pcapcheck
