// NCCL_IB_HCA parsing and matching with NCCL's rules (see core/hca_filter.h).
#include "core/hca_filter.h"

#include <cctype>
#include <charconv>

namespace roce {
namespace {

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())) != 0) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())) != 0) {
    text.remove_suffix(1);
  }
  return text;
}

bool valid_name(std::string_view name) {
  for (const char c : name) {
    if (std::isgraph(static_cast<unsigned char>(c)) == 0 || c == ':' || c == ',' || c == '^' ||
        c == '=') {
      return false;
    }
  }
  return !name.empty();
}

std::optional<HcaEntry> parse_entry(std::string_view text, std::string_view whole,
                                    std::string* error) {
  const auto fail = [&](const std::string& why) {
    *error = "NCCL_IB_HCA=" + std::string(whole) + ": " + why +
             "; expected [^][=]name[:port][,name[:port]...], for example ^mlx5_1 or =mlx5_0:1";
    return std::nullopt;
  };
  HcaEntry entry;
  std::string_view name = text;
  const size_t colon = text.find(':');
  if (colon != std::string_view::npos) {
    name = text.substr(0, colon);
    const std::string_view port_text = text.substr(colon + 1);
    int port = 0;
    const char* end = port_text.data() + port_text.size();
    const auto [ptr, ec] = std::from_chars(port_text.data(), end, port);
    if (port_text.empty() || ec != std::errc() || ptr != end || port < 1 || port > 255) {
      return fail("entry '" + std::string(text) + "' has port '" + std::string(port_text) +
                  "', not a port number in 1..255");
    }
    entry.port = port;
  }
  if (!valid_name(name)) {
    return fail(name.empty() ? "entry '" + std::string(text) + "' has no device name"
                             : "entry '" + std::string(text) + "' is not a device name");
  }
  entry.name = std::string(name);
  return entry;
}

}  // namespace

bool HcaFilter::matches(std::string_view name, int port) const {
  if (entries.empty()) {
    return true;
  }
  bool found = false;
  for (const HcaEntry& entry : entries) {
    const bool name_matches = exact ? name == entry.name : name.starts_with(entry.name);
    if (name_matches && (!entry.port || *entry.port == port)) {
      found = true;
      break;
    }
  }
  return exclude ? !found : found;
}

std::optional<HcaFilter> parse_hca_filter(std::string_view text, std::string* error) {
  HcaFilter filter;
  const std::string_view whole = text;
  std::string_view rest = trim(text);
  if (rest.empty()) {
    return filter;
  }
  // NCCL checks '^' before '=', so "^=mlx5_0" excludes exactly mlx5_0; "=^" is not special.
  if (rest.front() == '^') {
    filter.exclude = true;
    rest.remove_prefix(1);
  }
  if (!rest.empty() && rest.front() == '=') {
    filter.exact = true;
    rest.remove_prefix(1);
  }
  if (trim(rest).empty()) {
    *error = "NCCL_IB_HCA=" + std::string(whole) +
             ": no device follows the prefix; name at least one device (^mlx5_1) or unset it";
    return std::nullopt;
  }
  while (true) {
    const size_t comma = rest.find(',');
    const std::string_view item = trim(rest.substr(0, comma));
    if (item.empty()) {
      *error = "NCCL_IB_HCA=" + std::string(whole) +
               ": empty entry between commas; remove the extra comma";
      return std::nullopt;
    }
    std::optional<HcaEntry> entry = parse_entry(item, whole, error);
    if (!entry) {
      return std::nullopt;
    }
    filter.entries.push_back(std::move(*entry));
    if (comma == std::string_view::npos) {
      break;
    }
    rest = rest.substr(comma + 1);
  }
  return filter;
}

}  // namespace roce
