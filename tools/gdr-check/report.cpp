// Output of gdr-check.
#include "report.h"

#include <cstdio>
#include <string>

namespace gdr {
namespace {

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
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
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x",
                        static_cast<unsigned>(static_cast<unsigned char>(c)));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string summary(const Report& r) {
  std::string works;
  for (const auto& m : r.modes) {
    if (m.ok)
      works += (works.empty() ? "" : " and ") +
               std::string(m.mode == "pointer" ? "pointer (nvidia-peermem)" : "dma-buf");
  }
  return works.empty()
             ? "no GPUDirect RDMA mode works on this node: NCCL would stage through host memory"
             : "GPUDirect RDMA works by " + works;
}

}  // namespace

void print_report(const Report& r, OutputFormat format) {
  if (format == OutputFormat::Json) {
    std::printf(
        "{\"tool\":\"gdr-check\",\"exit_status\":%d,\"error\":%s,\"gpu\":%s,\"path\":%s,\"modes\":"
        "[",
        r.exit_status, r.error.empty() ? "null" : json_string(r.error).c_str(),
        r.gpu.empty() ? "null" : json_string(r.gpu).c_str(),
        r.path.empty() ? "null" : json_string(r.path).c_str());
    for (size_t i = 0; i < r.modes.size(); ++i) {
      const auto& m = r.modes[i];
      std::printf(
          "%s{\"mode\":%s,\"ok\":%s,\"reason\":%s,\"bytes\":%zu,\"write_gbps\":%.3f,\"read_gbps\":%"
          ".3f}",
          i == 0 ? "" : ",", json_string(m.mode).c_str(), m.ok ? "true" : "false",
          json_string(m.reason).c_str(), m.bytes, m.write_gbps, m.read_gbps);
    }
    std::printf("]}\n");
    return;
  }
  if (!r.error.empty()) {
    std::printf("gdr-check: %s\n", r.error.c_str());
    return;
  }
  if (format == OutputFormat::Text) {
    std::printf("gdr-check: %s; RDMA %s\n", r.gpu.c_str(), r.path.c_str());
  }
  for (const auto& m : r.modes) {
    if (m.ok) {
      std::printf("mode=%s status=ok write_gbps=%.2f read_gbps=%.2f bytes=%zu\n", m.mode.c_str(),
                  m.write_gbps, m.read_gbps, m.bytes);
    } else {
      std::printf("mode=%s status=fail reason=%s\n", m.mode.c_str(), json_string(m.reason).c_str());
    }
  }
  if (format == OutputFormat::Text)
    std::printf("gdr-check: %s\n", summary(r).c_str());
}

}  // namespace gdr
