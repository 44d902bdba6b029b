// NCCL_IB_HCA parsing and matching with NCCL's rules (see core/device/hca_filter.h).
#include "core/device/hca_filter.h"

#include <charconv>
#include <string>

#include "util/text.h"

namespace roce {
namespace {

// A decimal field of an entry: "1" in "mlx5_0:1". Returns false unless all of `text` is a number
// in lo..hi.
bool parse_field(std::string_view text, int lo, int hi, int* value) {
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, *value);
  return !text.empty() && ec == std::errc() && ptr == end && *value >= lo && *value <= hi;
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

std::string fmt_field(std::string_view entry, const char* what, std::string_view field, int lo,
                      int hi) {
  return "entry '" + std::string(entry) + "' has " + what + " '" + std::string(field) +
         "', not a number in " + std::to_string(lo) + ".." + std::to_string(hi);
}

Result<HcaEntry> parse_entry(std::string_view text, std::string_view whole) {
  const auto fail = [&](const std::string& why) {
    return failure("NCCL_IB_HCA=" + std::string(whole) + ": " + why +
                   "; expected [^][=]name[:port[:rail[:plane]]][,...], for example ^mlx5_1 or "
                   "=mlx5_0:1");
  };
  HcaEntry entry;
  std::string_view name = text;
  const size_t colon = text.find(':');
  if (colon != std::string_view::npos) {
    name = text.substr(0, colon);
    // port, then NCCL 2.30's rail and plane: name:port:rail:plane. An empty field leaves its
    // value unset, as NCCL reads it: "mlx5_0:" is any port, "=mlx5_0::0:0" any port on rail 0,
    // plane 0.
    std::string_view fields = text.substr(colon + 1);
    const char* what[] = {"port", "rail", "plane"};
    for (int f = 0; f < 3; ++f) {
      const size_t next = fields.find(':');
      const std::string_view field = fields.substr(0, next);
      int value = 0;
      // Ports are 1-based; rail and plane are NCCL's int16 identifiers.
      const int lo = f == 0 ? 1 : 0;
      const int hi = f == 0 ? 255 : 32767;
      if (!field.empty()) {
        if (!parse_field(field, lo, hi, &value)) {
          return fail(fmt_field(text, what[f], field, lo, hi));
        }
        (f == 0 ? entry.port : f == 1 ? entry.rail : entry.plane) = value;
      }
      if (next == std::string_view::npos) {
        break;
      }
      if (f == 2) {
        return fail("entry '" + std::string(text) + "' has more than name:port:rail:plane");
      }
      fields = fields.substr(next + 1);
    }
  }
  if (!valid_name(name)) {
    return fail(name.empty() ? "entry '" + std::string(text) + "' has no device name"
                             : "entry '" + std::string(text) + "' is not a device name");
  }
  entry.name = std::string(name);
  return entry;
}

}  // namespace

namespace {

// The first entry naming `name` on `port` (nullopt: any port), whatever the list's sense.
const HcaEntry* first_entry_naming(const HcaFilter& filter, std::string_view name,
                                   std::optional<int> port) {
  for (const HcaEntry& entry : filter.entries) {
    const bool name_matches = filter.exact ? name == entry.name : name.starts_with(entry.name);
    if (name_matches && (!port || !entry.port || *entry.port == *port)) {
      return &entry;
    }
  }
  return nullptr;
}

bool filter_matches(const HcaFilter& filter, std::string_view name, std::optional<int> port) {
  if (filter.entries.empty()) {
    return true;
  }
  const bool found = first_entry_naming(filter, name, port) != nullptr;
  return filter.exclude ? !found : found;
}

}  // namespace

bool HcaFilter::matches(std::string_view name, int port) const {
  return filter_matches(*this, name, port);
}

const HcaEntry* HcaFilter::selecting_entry(std::string_view name, int port) const {
  return exclude ? nullptr : first_entry_naming(*this, name, port);
}

bool HcaFilter::matches_name(std::string_view name) const {
  return filter_matches(*this, name, std::nullopt);
}

Result<HcaFilter> parse_hca_filter(std::string_view text) {
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
    return failure(
        "NCCL_IB_HCA=" + std::string(whole) +
        ": no device follows the prefix; name at least one device (^mlx5_1) or unset it");
  }
  while (true) {
    const size_t comma = rest.find(',');
    const std::string_view item = trim(rest.substr(0, comma));
    // Empty entries ("mlx5_0,,mlx5_1", a trailing comma) are skipped, as NCCL's tokenizer does.
    if (!item.empty()) {
      Result<HcaEntry> entry = parse_entry(item, whole);
      if (!entry) {
        return failure(entry.error());
      }
      filter.entries.push_back(std::move(*entry));
    }
    if (comma == std::string_view::npos) {
      break;
    }
    rest = rest.substr(comma + 1);
  }
  return filter;
}

}  // namespace roce
