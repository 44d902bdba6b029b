// Output of gdr-check.
#include "report.h"

#include <cstdint>
#include <cstdio>
#include <string>

#include "json_writer.h"

namespace gdr {
namespace {

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
    roce::tools::JsonWriter j;
    const auto text_or_null = [&j](const std::string& text) {
      if (text.empty()) {
        j.null();
      } else {
        j.value(text);
      }
    };
    j.begin_object().key("tool").value("gdr-check").key("exit_status").value(r.exit_status);
    j.key("error");
    text_or_null(r.error);
    j.key("gpu");
    text_or_null(r.gpu);
    j.key("path");
    text_or_null(r.path);
    j.key("modes").begin_array();
    for (const auto& m : r.modes) {
      j.begin_object().key("mode").value(m.mode).key("ok").value(m.ok);
      j.key("reason").value(m.reason).key("bytes").value(static_cast<std::uint64_t>(m.bytes));
      j.key("write_gbps").value(m.write_gbps).key("read_gbps").value(m.read_gbps).end_object();
    }
    j.end_array().end_object();
    std::printf("%s\n", j.str().c_str());
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
      std::printf("mode=%s status=fail reason=%s\n", m.mode.c_str(),
                  roce::tools::json_string(m.reason).c_str());
    }
  }
  if (format == OutputFormat::Text)
    std::printf("gdr-check: %s\n", summary(r).c_str());
}

}  // namespace gdr
