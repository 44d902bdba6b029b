// Parsing mlx5's traffic_class override file: see tc_override.h.
#include "core/device/tc_override.h"

#include <fmt/format.h>

#include <cerrno>
#include <charconv>
#include <stdexcept>

#include "core/device/sysfs.h"
#include "util/text.h"

namespace roce {
namespace {

// A line or field of the file without its padding: sysfs may end it in NULs, and a rule's match
// ends in the ',' before its class.
std::string_view trim_field(std::string_view text) noexcept {
  using namespace std::string_view_literals;
  return trim_front(trim_back(text, " \t\r,\0"sv), " \t");
}

std::optional<int> parse_class(std::string_view text) noexcept {
  text = trim_field(text);
  int value = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0 || value > 255) {
    return std::nullopt;
  }
  return value;
}

}  // namespace

Result<TcOverride> parse_tc_override(std::string_view content) {
  constexpr std::string_view kGlobal = "Global tclass=";
  constexpr std::string_view kRuleClass = "tclass=";
  TcOverride result;
  size_t line_number = 0;
  while (!content.empty()) {
    const size_t newline = content.find('\n');
    std::string_view line = trim_field(content.substr(0, newline));
    content = newline == std::string_view::npos ? std::string_view() : content.substr(newline + 1);
    ++line_number;
    if (line.empty()) {
      continue;
    }
    if (line.starts_with(kGlobal)) {
      const auto value = parse_class(line.substr(kGlobal.size()));
      if (!value) {
        return failure(fmt::format("line {} '{}': the global class is not a number in 0..255",
                                   line_number, line));
      }
      result.global_class = *value;
      continue;
    }
    // A rule: comma-separated key=value fields, the class last.
    const size_t class_at = line.rfind(kRuleClass);
    const bool at_field_start =
        class_at != std::string_view::npos && (class_at == 0 || line[class_at - 1] == ',');
    const auto value =
        at_field_start ? parse_class(line.substr(class_at + kRuleClass.size())) : std::nullopt;
    if (!value) {
      return failure(
          fmt::format("line {} '{}' is neither 'Global tclass=<n>' nor an address rule "
                      "ending in 'tclass=<n>' with n in 0..255",
                      line_number, line));
    }
    result.rules.push_back({std::string(trim_field(line.substr(0, class_at))), *value});
  }
  return result;
}

Result<std::optional<TcOverride>> read_tc_override(const std::string& root,
                                                   const std::string& device, int port) {
  const std::string file =
      fmt::format("{}/tc/{}/traffic_class", sysfs::device_dir(root, device), port);
  int error_number = 0;
  const auto content = sysfs::read_attribute(file, &error_number);
  if (!content) {
    if (error_number == ENOENT || error_number == ENOTDIR) {
      return std::optional<TcOverride>();
    }
    return failure(fmt::format(
        "cannot read the traffic-class override {}: {}; without it the class actually used "
        "cannot be verified (run with read access to sysfs)",
        file, strerrordesc_np(error_number)));
  }
  auto parsed = parse_tc_override(*content);
  if (!parsed) {
    return failure(
        fmt::format("cannot parse the traffic-class override {}: {}", file, parsed.error()));
  }
  parsed->file = file;
  return std::optional<TcOverride>(std::move(*parsed));
}

Status check_tc_override(const TcOverride& override_info, int requested, std::string_view setting) {
  if (override_info.global_class) {
    if (*override_info.global_class == requested) {
      return {};
    }
    return failure(fmt::format(
        "{} holds 'Global tclass={}' (dscp {}), which the driver applies to every QP of this "
        "port, but traffic class {} (dscp {}) is configured; make them agree: echo {} > {} (as "
        "root), or configure {}={}",
        override_info.file, *override_info.global_class, *override_info.global_class >> 2,
        requested, requested >> 2, requested, override_info.file, setting,
        *override_info.global_class));
  }
  for (const auto& rule : override_info.rules) {
    if (rule.traffic_class != requested) {
      return failure(fmt::format(
          "{} holds the rule '{}' with traffic class {} (dscp {}), which the driver applies to "
          "QPs whose addresses match instead of the configured {} (dscp {}); remove the rule or "
          "make its class {}",
          override_info.file, rule.match, rule.traffic_class, rule.traffic_class >> 2, requested,
          requested >> 2, requested));
    }
  }
  return {};
}

}  // namespace roce
