// Text and JSON renderings of a Summary (see report.h).
#include "report.h"

#include <cinttypes>

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

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned char>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
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
  std::fprintf(out, "{\"file\":%s,\"format\":%s,\"link_types\":[", json_string(path).c_str(),
               json_string(s.format).c_str());
  bool first = true;
  for (const std::uint32_t t : s.link_types) {
    std::fprintf(out, "%s%u", first ? "" : ",", t);
    first = false;
  }
  std::fprintf(out,
               "],\"frames\":%" PRIu64 ",\"roce_packets\":%" PRIu64 ",\"ipv4\":%" PRIu64
               ",\"ipv6\":%" PRIu64 ",\"valid\":%" PRIu64 ",\"invalid\":%" PRIu64
               ",\"unverifiable\":%" PRIu64 ",\"header_errors\":%" PRIu64 ",\"other_ip\":%" PRIu64
               ",\"non_ip\":%" PRIu64 ",\"opcodes\":{",
               s.frames, s.roce, s.ipv4, s.ipv6, s.valid, s.invalid, s.unverifiable,
               s.structure_errors, s.other_ip, s.non_ip);
  first = true;
  for (const auto& [op, n] : s.opcodes) {
    std::fprintf(out, "%s%s:%" PRIu64, first ? "" : ",", json_string(opcode_label(op)).c_str(), n);
    first = false;
  }
  std::fprintf(out, "},\"traffic_classes\":[");
  first = true;
  for (const auto& [tc, n] : s.traffic_classes) {
    std::fprintf(out, "%s{\"tos\":%d,\"dscp\":%d,\"ecn\":%d,\"packets\":%" PRIu64 "}",
                 first ? "" : ",", tc, tc >> 2, tc & 3, n);
    first = false;
  }
  std::fprintf(out, "],\"problems\":[");
  first = true;
  for (const Problem& p : s.problems) {
    std::fprintf(out, "%s{\"frame\":%" PRIu64 ",\"kind\":%s,\"detail\":%s", first ? "" : ",",
                 p.frame, json_string(p.kind).c_str(), json_string(p.detail).c_str());
    if (p.opcode >= 0) {
      std::fprintf(out, ",\"opcode\":%s,\"dest_qp\":%u,\"psn\":%u",
                   json_string(opcode_label(p.opcode)).c_str(), p.dest_qp, p.psn);
    }
    std::fprintf(out, "}");
    first = false;
  }
  std::fprintf(out, "],\"problems_omitted\":%" PRIu64 "}\n", s.problems_omitted);
}

}  // namespace vroce::pcapcheck
