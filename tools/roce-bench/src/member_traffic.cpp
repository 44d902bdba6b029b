// Per-member port counters for --vdevice: see member_traffic.h.
#include "member_traffic.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "options.h"

namespace roce::bench {
namespace {

std::optional<std::uint64_t> read_words(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::string text;
  if (!(in >> text)) {
    return std::nullopt;
  }
  const auto words = parse_integer<std::uint64_t>(text);
  if (!words || *words > UINT64_MAX / 4) {
    return std::nullopt;
  }
  return *words * 4;
}

std::string figure(const std::optional<std::uint64_t>& bytes) {
  return bytes ? std::to_string(*bytes) : "-";
}

std::optional<std::uint64_t> parse_figure(const std::string& text) {
  return text == "-" ? std::nullopt : parse_integer<std::uint64_t>(text);
}

std::string megabytes(const std::optional<std::uint64_t>& bytes) {
  return bytes ? fmt::format("{:.1f} MB", static_cast<double>(*bytes) / 1e6) : "? (no counter)";
}

}  // namespace

std::string sysfs_root_from_env() {
  const char* root = std::getenv("NCCL_ROCE_SYSFS_ROOT");
  return root != nullptr && *root != '\0' ? root : "/sys";
}

std::string port_counters_dir(const std::string& root, const std::string& device) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path ports = fs::path(root) / "class" / "infiniband" / device / "ports";
  std::string found;
  int count = 0;
  for (const auto& entry : fs::directory_iterator(ports, ec)) {
    ++count;
    found = (entry.path() / "counters").string();
  }
  return count == 1 ? found : "";
}

PortTraffic read_port_traffic(const std::string& counters_dir) {
  if (counters_dir.empty()) {
    return {};
  }
  const std::filesystem::path dir(counters_dir);
  return {read_words(dir / "port_xmit_data"), read_words(dir / "port_rcv_data")};
}

PortTraffic traffic_delta(const PortTraffic& before, const PortTraffic& after) {
  auto minus = [](const std::optional<std::uint64_t>& a, const std::optional<std::uint64_t>& b) {
    // A counter that went down (reset, or a 32-bit one that wrapped) counts from 0.
    return a && b ? std::optional<std::uint64_t>(*b >= *a ? *b - *a : *b) : std::nullopt;
  };
  return {minus(before.sent_bytes, after.sent_bytes),
          minus(before.received_bytes, after.received_bytes)};
}

std::string encode_member_traffic(const std::vector<MemberTraffic>& members) {
  std::string text;
  for (const auto& m : members) {
    text += (text.empty() ? "" : ";") + m.device + " " + figure(m.traffic.sent_bytes) + " " +
            figure(m.traffic.received_bytes);
  }
  return text;
}

std::vector<MemberTraffic> decode_member_traffic(int rank, const std::string& text) {
  std::vector<MemberTraffic> members;
  std::istringstream items(text);
  std::string item;
  while (std::getline(items, item, ';')) {
    std::istringstream fields(item);
    MemberTraffic m;
    m.rank = rank;
    std::string sent;
    std::string received;
    if (fields >> m.device >> sent >> received) {
      m.traffic = {parse_figure(sent), parse_figure(received)};
      members.push_back(m);
    }
  }
  return members;
}

std::string describe_member_traffic(const std::vector<MemberTraffic>& rank_members) {
  if (rank_members.empty()) {
    return "";
  }
  std::string text = fmt::format("rank {}:", rank_members.front().rank);
  for (std::size_t i = 0; i < rank_members.size(); ++i) {
    const auto& m = rank_members[i];
    text += fmt::format("{} {} sent {}, received {}", i == 0 ? "" : ";", m.device,
                        megabytes(m.traffic.sent_bytes), megabytes(m.traffic.received_bytes));
  }
  return text;
}

}  // namespace roce::bench
