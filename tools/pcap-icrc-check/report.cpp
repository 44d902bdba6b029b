// Text and JSON renderings of a Summary (see report.h).
#include "report.h"

#include <cinttypes>

#include "json_writer.h"
#include "link_layer.h"
#include "wire/opcode.h"

namespace vroce::pcapcheck {
namespace {

std::string opcode_label(int opcode) {
  const auto name = wire::opcode_name(static_cast<std::uint8_t>(opcode));
  if (name != "UNKNOWN") {
    return std::string(name);
  }
  char buf[24];
  std::snprintf(buf, sizeof buf, "UNKNOWN_0x%02x", opcode);
  return buf;
}

std::string link_types(const Summary& s) {
  std::string out;
  for (const std::uint32_t t : s.link_types) {
    if (!out.empty()) {
      out += ", ";
    }
    out += link_type_name(t);
  }
  return out.empty() ? "none" : out;
}

}  // namespace

void print_text(std::FILE* out, const std::string& path, const Summary& s) {
  std::fprintf(out, "%s: %s, %s, %" PRIu64 " frames\n", path.c_str(), s.format.c_str(),
               link_types(s).c_str(), s.frames);
  std::fprintf(out,
               "RoCEv2 packets (UDP port 4791): %" PRIu64 " (IPv4 %" PRIu64 ", IPv6 %" PRIu64 ")\n",
               s.roce, s.ipv4, s.ipv6);
  std::fprintf(out, "  valid ICRC:      %" PRIu64 "\n", s.valid);
  std::fprintf(out, "  invalid ICRC:    %" PRIu64 "\n", s.invalid);
  std::fprintf(out, "  unverifiable:    %" PRIu64 "\n", s.unverifiable);
  std::fprintf(out, "  header errors:   %" PRIu64 "\n", s.structure_errors);
  std::fprintf(out, "other frames: %" PRIu64 " IP, %" PRIu64 " non-IP\n", s.other_ip, s.non_ip);
  if (!s.opcodes.empty()) {
    std::fprintf(out, "opcodes:\n");
    for (const auto& [op, n] : s.opcodes) {
      std::fprintf(out, "  0x%02x %-36s %" PRIu64 "\n", op, opcode_label(op).c_str(), n);
    }
  }
  if (!s.traffic_classes.empty()) {
    std::fprintf(out, "traffic classes:\n");
    for (const auto& [tc, n] : s.traffic_classes) {
      std::fprintf(out, "  dscp %2d ecn %d (tos 0x%02x) %" PRIu64 "\n", tc >> 2, tc & 3, tc, n);
    }
  }
  for (const Problem& p : s.problems) {
    std::fprintf(out, "frame %" PRIu64 ": %s: %s", p.frame, p.kind.c_str(), p.detail.c_str());
    if (p.opcode >= 0) {
      std::fprintf(out, " (%s, qp 0x%06x, psn %u)", opcode_label(p.opcode).c_str(), p.dest_qp,
                   p.psn);
    }
    std::fprintf(out, "\n");
  }
  if (s.problems_omitted > 0) {
    std::fprintf(out, "... %" PRIu64 " more problems not listed\n", s.problems_omitted);
  }
}

void print_json(std::FILE* out, const std::string& path, const Summary& s) {
  roce::tools::JsonWriter j;
  j.begin_object().key("file").value(path).key("format").value(s.format);
  j.key("link_types").begin_array();
  for (const std::uint32_t t : s.link_types) {
    j.value(t);
  }
  j.end_array();
  j.key("frames").value(s.frames).key("roce_packets").value(s.roce);
  j.key("ipv4").value(s.ipv4).key("ipv6").value(s.ipv6);
  j.key("valid").value(s.valid).key("invalid").value(s.invalid);
  j.key("unverifiable").value(s.unverifiable).key("header_errors").value(s.structure_errors);
  j.key("other_ip").value(s.other_ip).key("non_ip").value(s.non_ip);
  j.key("opcodes").begin_object();
  for (const auto& [op, n] : s.opcodes) {
    j.key(opcode_label(op)).value(n);
  }
  j.end_object();
  j.key("traffic_classes").begin_array();
  for (const auto& [tc, n] : s.traffic_classes) {
    j.begin_object().key("tos").value(tc).key("dscp").value(tc >> 2).key("ecn").value(tc & 3);
    j.key("packets").value(n).end_object();
  }
  j.end_array();
  j.key("problems").begin_array();
  for (const Problem& p : s.problems) {
    j.begin_object().key("frame").value(p.frame).key("kind").value(p.kind);
    j.key("detail").value(p.detail);
    if (p.opcode >= 0) {
      j.key("opcode").value(opcode_label(p.opcode)).key("dest_qp").value(p.dest_qp);
      j.key("psn").value(p.psn);
    }
    j.end_object();
  }
  j.end_array();
  j.key("problems_omitted").value(s.problems_omitted).end_object();
  std::fprintf(out, "%s\n", j.str().c_str());
}

}  // namespace vroce::pcapcheck
