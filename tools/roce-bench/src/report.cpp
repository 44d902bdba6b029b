// Tables and JSON.
#include "report.h"

#include <fmt/format.h>

#include <utility>

#include "json_writer.h"

namespace roce::bench {
namespace {

const char* time_column(Mode mode) {
  switch (mode) {
    case Mode::PingPong:
      return "one-way latency = median round trip / 2";
    case Mode::Bandwidth:
    case Mode::BiBandwidth:
      return "time per message, slowest rank";
    case Mode::AllReduce:
      return "time per all-reduce, slowest rank's mean";
    case Mode::Tp:
      return "per decode step (token) and per all-reduce, slowest rank";
  }
  return "";
}

void print_line(std::FILE* out, const std::string& text) {
  std::fputs(text.c_str(), out);
  std::fputc('\n', out);
}

}  // namespace

std::vector<Ratio> compare(Mode mode, const Series& plugin, const Series& raw) {
  std::vector<Ratio> ratios;
  for (const Row& p : plugin.rows) {
    for (const Row& r : raw.rows) {
      if (r.bytes != p.bytes) {
        continue;
      }
      Ratio ratio{p.bytes, 0, 0, 0};
      if (mode == Mode::PingPong) {
        ratio.plugin = p.time_us;
        ratio.raw = r.time_us;
      } else {
        ratio.plugin = p.algbw;
        ratio.raw = r.algbw;
      }
      ratio.ratio = ratio.raw > 0 ? ratio.plugin / ratio.raw : 0;
      ratios.push_back(ratio);
    }
  }
  return ratios;
}

namespace {

// --vdevice: one line per rank with what each member's port carried, and whether every member
// carried data (a virtual NIC that leaves a member idle stripes nothing).
void print_member_traffic(std::FILE* out, const RunInfo& info) {
  print_line(
      out,
      "# virtual NIC members' port counters over the run (<root>/class/infiniband/<dev>/"
      "ports/<port>/counters, <root> each rank's NCCL_ROCE_SYSFS_ROOT, else /sys; rank 0's: " +
          info.member_counters_root + "):");
  bool known = !info.member_traffic.empty();
  bool all_carried = known;
  for (std::size_t i = 0; i < info.member_traffic.size();) {
    std::vector<MemberTraffic> rank_members;
    const int rank = info.member_traffic[i].rank;
    for (; i < info.member_traffic.size() && info.member_traffic[i].rank == rank; ++i) {
      const PortTraffic& t = info.member_traffic[i].traffic;
      known = known && t.sent_bytes && t.received_bytes;
      all_carried =
          all_carried && t.sent_bytes && t.received_bytes && *t.sent_bytes + *t.received_bytes > 0;
      rank_members.push_back(info.member_traffic[i]);
    }
    print_line(out, "#   " + describe_member_traffic(rank_members));
  }
  if (!known) {
    print_line(out,
               "#   (some counters are not readable here: set NCCL_ROCE_SYSFS_ROOT where "
               "the ports' sysfs is; over vroce the launcher sets it up unless --vroce-sysfs)");
  } else {
    print_line(out, all_carried ? "#   every member carried data"
                                : "#   NOT every member carried data: the virtual NIC did "
                                  "not stripe over all its members");
  }
}

}  // namespace

void print_header(std::FILE* out, const RunInfo& info) {
  print_line(out, fmt::format("# roce-bench {}: {} over {} rank(s), {}", info.version,
                              mode_name(info.mode), info.nranks, path_name(info.path)));
  print_line(out, fmt::format("# date {}  host {}  {}", info.date, info.host, info.cpus));
  if (!info.command.empty()) {
    print_line(out, "# command: " + info.command);
  }
  if (!info.job_source.empty()) {
    print_line(out, "# rank and size from " + info.job_source);
  }
  if (!info.plugin_path.empty()) {
    print_line(out, fmt::format("# plugin {} ({} \"{}\")", info.plugin_path, info.plugin_symbol,
                                info.plugin_name));
  }
  if (info.vroce) {
    print_line(out,
               std::string("# fabric: vroce (") + info.verbs_library + "): " + kVroceFiguresNote);
  }
  print_line(out, fmt::format("# memory {}{}{}  window {}{}", info.memory,
                              info.registration.empty() ? "" : ", " + info.registration,
                              info.flush ? ", iflush after receives" : "", info.window,
                              info.mode == Mode::AllReduce || info.mode == Mode::Tp
                                  ? fmt::format("  slice {} B", info.slice_bytes)
                                  : std::string()));
  if (!info.vdevice.empty()) {
    print_line(out, "# virtual NIC: " + info.vdevice);
  }
  for (const auto& rank : info.ranks) {
    print_line(out, "#   " + rank);
  }
  print_line(out, fmt::format("# time: {}", time_column(info.mode)));
  print_line(out, "#");
}

void print_footer(std::FILE* out, const RunInfo& info, std::size_t sizes_done,
                  std::size_t sizes_planned) {
  if (!info.profiler_events.empty()) {
    print_line(out, "# NCCL profiler events: " + info.profiler_events);
  }
  if (!info.vdevice_members.empty()) {
    print_member_traffic(out, info);
  }
  if (!info.load_at_end.empty()) {
    print_line(out, "# load average " + info.load_at_end + " at end");
  }
  if (info.interrupted) {
    print_line(out, fmt::format("# interrupted (SIGINT): {} of {} sizes measured", sizes_done,
                                sizes_planned));
  }
}

TableStream::TableStream(std::FILE* out, Mode mode, std::vector<std::string> labels)
    : out_(out), mode_(mode), labels_(std::move(labels)) {}

void TableStream::begin() {
  if (out_ == nullptr) {
    return;
  }
  const bool several = labels_.size() > 1;
  if (several) {
    std::string names;
    for (const auto& l : labels_) {
      names += (names.empty() ? "" : " and ") + l;
    }
    print_line(out_, "# " + names + ", size by size (path column)");
  } else if (!labels_.empty()) {
    print_line(out_, "# " + labels_[0]);
  }
  const std::string path_head = several ? fmt::format(" {:<10}", "path") : std::string();
  const std::string path_unit = several ? fmt::format(" {:<10}", "") : std::string();
  if (mode_ == Mode::PingPong) {
    print_line(
        out_, fmt::format("#{:>11} {:>12} {:>7} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9} {:>7}",
                          "size", "count", "type", "time", "rtt p50", "rtt p90", "rtt p99", "algbw",
                          "busbw", "#wrong") +
                  path_head);
    print_line(
        out_,
        fmt::format("#{:>11} {:>12} {:>7} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9} {:>7}", "(B)",
                    "(elements)", "", "(us)", "(us)", "(us)", "(us)", "(GB/s)", "(GB/s)", "") +
            path_unit);
  } else {
    print_line(out_, fmt::format("#{:>11} {:>12} {:>7} {:>6} {:>10} {:>9} {:>9} {:>7}", "size",
                                 "count", "type", "redop", "time", "algbw", "busbw", "#wrong") +
                         path_head);
    print_line(out_, fmt::format("#{:>11} {:>12} {:>7} {:>6} {:>10} {:>9} {:>9} {:>7}", "(B)",
                                 "(elements)", "", "", "(us)", "(GB/s)", "(GB/s)", "") +
                         path_unit);
  }
  std::fflush(out_);
}

void TableStream::row(std::size_t series_index, const Row& r) {
  if (out_ == nullptr) {
    return;
  }
  const std::string path = labels_.size() > 1 && series_index < labels_.size()
                               ? " " + labels_[series_index]
                               : std::string();
  if (mode_ == Mode::PingPong) {
    print_line(out_, fmt::format(" {:>11} {:>12} {:>7} {:>10.2f} {:>10.2f} {:>10.2f} {:>10.2f} "
                                 "{:>9.3f} {:>9.3f} {:>7}",
                                 r.bytes, r.count, "float", r.time_us, r.rtt_us.p50, r.rtt_us.p90,
                                 r.rtt_us.p99, r.algbw, r.busbw, r.wrong) +
                         path);
  } else {
    print_line(out_,
               fmt::format(" {:>11} {:>12} {:>7} {:>6} {:>10.2f} {:>9.3f} {:>9.3f} {:>7}", r.bytes,
                           r.count, "float", mode_ == Mode::AllReduce ? "sum" : "none", r.time_us,
                           r.algbw, r.busbw, r.wrong) +
                   path);
  }
  std::fflush(out_);
}

void TableStream::finish(int nranks, const std::vector<Series>& series) {
  if (out_ == nullptr) {
    return;
  }
  for (const Series& s : series) {
    if (series.size() > 1) {
      print_line(out_, "# " + s.label);
    }
    std::size_t wrong = 0;
    double busbw = 0;
    for (const Row& r : s.rows) {
      wrong += r.wrong;
      busbw += r.busbw;
    }
    print_line(out_,
               fmt::format("# Out of bounds values : {} {}", wrong, wrong == 0 ? "OK" : "FAILED"));
    print_line(out_,
               fmt::format("# Avg bus bandwidth    : {:.3f}",
                           s.rows.empty() ? 0.0 : busbw / static_cast<double>(s.rows.size())));
    if (mode_ == Mode::AllReduce) {
      print_line(out_, fmt::format("# busbw = algbw x 2({}-1)/{}", nranks, nranks));
    }
    print_line(out_, "#");
  }
  std::fflush(out_);
}

void print_comparison(std::FILE* out, Mode mode, bool raw_cts, const std::vector<Ratio>& ratios) {
  const bool latency = mode == Mode::PingPong;
  const char* floor = raw_cts ? "raw verbs + clear-to-send" : "raw verbs";
  print_line(out, latency ? fmt::format("# plugin / {}, one-way latency (lower is better; target "
                                        "<= 1.2x at 8 B)",
                                        floor)
                          : fmt::format("# plugin / {}, algbw (higher is better; target >= 0.9x "
                                        "at 4 MiB)",
                                        floor));
  print_line(out,
             fmt::format("#{:>11} {:>12} {:>12} {:>11}", "size", "plugin", "raw", "plugin/raw"));
  const char* unit = latency ? "(us)" : "(GB/s)";
  print_line(out, fmt::format("#{:>11} {:>12} {:>12} {:>11}", "(B)", unit, unit, ""));
  for (const Ratio& r : ratios) {
    print_line(out, fmt::format(" {:>11} {:>12.3f} {:>12.3f} {:>10.3f}x", r.bytes, r.plugin, r.raw,
                                r.ratio));
  }
  print_line(out, "#");
}

std::size_t total_wrong(const std::vector<Series>& series) {
  std::size_t wrong = 0;
  for (const auto& s : series) {
    for (const auto& r : s.rows) {
      wrong += r.wrong;
    }
  }
  return wrong;
}

void write_run_fields(tools::JsonWriter& j, const RunInfo& info) {
  j.key("tool").value("roce-bench");
  j.key("version").value(info.version);
  j.key("date").value(info.date);
  j.key("host").value(info.host);
  j.key("command").value(info.command);
  j.key("cpus").value(info.cpus);
  j.key("mode").value(mode_name(info.mode));
}

void write_fabric_fields(tools::JsonWriter& j, const RunInfo& info) {
  j.key("fabric").begin_object();
  j.key("verbs_library").value(info.verbs_library);
  j.key("vroce").value(info.vroce);
  if (info.vroce) {
    j.key("note").value(kVroceFiguresNote);
  }
  j.end_object();
  if (!info.job_source.empty()) {
    j.key("job_source").value(info.job_source);
  }
}

void write_percentiles(tools::JsonWriter& j, const char* name, const Percentiles& p) {
  j.key(name).begin_object();
  j.key("p50").value(p.p50);
  j.key("p90").value(p.p90);
  j.key("p99").value(p.p99);
  j.key("min").value(p.min);
  j.key("max").value(p.max);
  j.key("mean").value(p.mean);
  j.end_object();
}

std::string render_json(const RunInfo& info, const std::vector<Series>& series,
                        const std::vector<Ratio>& ratios, std::size_t wrong_total, bool passed,
                        const std::string& error) {
  tools::JsonWriter j;
  j.begin_object();
  write_run_fields(j, info);
  j.key("path").value(path_name(info.path));
  write_fabric_fields(j, info);
  if (info.path != Path::Plugin) {
    j.key("raw_protocol").value(info.raw_cts ? "clear-to-send" : "write");
  }
  j.key("api").value(api_name(info.api));
  j.key("nranks").value(info.nranks);
  j.key("window").value(info.window);
  j.key("slice_bytes").value(static_cast<std::uint64_t>(info.slice_bytes));
  j.key("memory").value(info.memory);
  j.key("registration").value(info.registration);
  j.key("flush").value(info.flush);
  if (!info.plugin_path.empty()) {
    j.key("plugin").begin_object();
    j.key("path").value(info.plugin_path);
    j.key("name").value(info.plugin_name);
    j.key("symbol").value(info.plugin_symbol);
    j.key("warnings").value(static_cast<std::uint64_t>(info.plugin_warnings));
    if (!info.profiler_events.empty()) {
      j.key("profiler_events").value(info.profiler_events);
    }
    j.end_object();
  }
  j.key("ranks").begin_array();
  for (const auto& r : info.ranks) {
    j.value(r);
  }
  j.end_array();
  if (!info.vdevice_members.empty()) {
    j.key("vdevice").begin_object();
    j.key("members").begin_array();
    for (const int m : info.vdevice_members) {
      j.value(m);
    }
    j.end_array();
    j.key("description").value(info.vdevice);
    j.key("counters_root").value(info.member_counters_root);
    j.key("member_traffic").begin_array();
    for (const auto& m : info.member_traffic) {
      j.begin_object();
      j.key("rank").value(m.rank);
      j.key("device").value(m.device);
      for (const auto& [key, bytes] : {std::pair{"sent_bytes", m.traffic.sent_bytes},
                                       std::pair{"received_bytes", m.traffic.received_bytes}}) {
        j.key(key);
        if (bytes) {
          j.value(*bytes);
        } else {
          j.null();
        }
      }
      j.end_object();
    }
    j.end_array();
    j.end_object();
  }
  // Plugin calls per rank: what the callgrind script divides instruction counts by.
  auto counters = [&j](const char* key, const std::vector<CallCounters>& all) {
    j.key(key).begin_array();
    for (const auto& c : all) {
      j.begin_object();
      j.key("isend").value(c.isend);
      j.key("isend_retry").value(c.isend_retry);
      j.key("irecv").value(c.irecv);
      j.key("irecv_retry").value(c.irecv_retry);
      j.key("test").value(c.test);
      j.key("test_pending").value(c.test_pending);
      j.key("iflush").value(c.iflush);
      j.key("ll_hints").value(c.ll_hints);
      j.end_object();
    }
    j.end_array();
  };
  // Plugin calls per rank: what the callgrind script divides instruction counts by.
  counters("plugin_calls", info.plugin_calls);
  counters("plugin_timed_calls", info.plugin_timed_calls);
  j.key("series").begin_array();
  for (const auto& s : series) {
    j.begin_object();
    j.key("label").value(s.label);
    j.key("rows").begin_array();
    for (const auto& r : s.rows) {
      j.begin_object();
      j.key("size").value(static_cast<std::uint64_t>(r.bytes));
      j.key("count").value(static_cast<std::uint64_t>(r.count));
      j.key("type").value("float");
      j.key("iters").value(r.iters);
      j.key("time_us").value(r.time_us);
      j.key("algbw_gbs").value(r.algbw);
      j.key("busbw_gbs").value(r.busbw);
      j.key("wrong").value(static_cast<std::uint64_t>(r.wrong));
      if (r.has_rtt) {
        write_percentiles(j, "rtt_us", r.rtt_us);
      }
      j.end_object();
    }
    j.end_array();
    j.end_object();
  }
  j.end_array();
  j.key("ratios").begin_array();
  for (const auto& r : ratios) {
    j.begin_object();
    j.key("size").value(static_cast<std::uint64_t>(r.bytes));
    j.key("metric").value(info.mode == Mode::PingPong ? "latency_us" : "algbw_gbs");
    j.key("plugin").value(r.plugin);
    j.key("raw").value(r.raw);
    j.key("plugin_over_raw").value(r.ratio);
    j.end_object();
  }
  j.end_array();
  j.key("wrong_total").value(static_cast<std::uint64_t>(wrong_total));
  j.key("interrupted").value(info.interrupted);
  j.key("status").value(!passed ? "fail" : info.interrupted ? "interrupted" : "pass");
  if (!error.empty()) {
    j.key("error").value(error);
  }
  j.end_object();
  return j.str() + "\n";
}

}  // namespace roce::bench
