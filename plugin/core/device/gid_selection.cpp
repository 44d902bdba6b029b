// GID selection on a snapshot of a port's GID table (see core/device/gid_selection.h).
#include "core/device/gid_selection.h"

#include <algorithm>

#include "util/cidr.h"

namespace roce {
namespace {

// A table listing in an error stays one readable line.
constexpr size_t kMaxListedEntries = 16;

bool is_zero(const Ipv6Bytes& gid) {
  return std::all_of(gid.begin(), gid.end(), [](uint8_t b) { return b == 0; });
}

bool is_link_local(const Ipv6Bytes& gid) {
  return gid[0] == 0xfe && (gid[1] & 0xc0) == 0x80;
}

AddressFamily family_of(const Ipv6Bytes& gid) {
  return is_ipv4_mapped(gid) ? AddressFamily::Ipv4 : AddressFamily::Ipv6;
}

const char* family_setting(AddressFamily family) {
  return family == AddressFamily::Ipv4 ? "AF_INET" : "AF_INET6";
}

const char* family_name(AddressFamily family) {
  return family == AddressFamily::Ipv4 ? "IPv4" : "IPv6";
}

std::string location(const GidSelectionPolicy& policy) {
  if (policy.device_name.empty()) {
    return "";
  }
  std::string text = " on " + policy.device_name;
  if (policy.port > 0) {
    text += " port " + std::to_string(policy.port);
  }
  return text;
}

// Usable as a source GID of the wanted family, whatever its type: not empty, not link-local.
bool usable_address(const GidTableEntry& entry, AddressFamily family) {
  return !is_zero(entry.gid) && !is_link_local(entry.gid) && family_of(entry.gid) == family;
}

const GidTableEntry* find_index(std::span<const GidTableEntry> table, int index) {
  for (const GidTableEntry& entry : table) {
    if (entry.index == index) {
      return &entry;
    }
  }
  return nullptr;
}

const GidTableEntry* automatic_choice(std::span<const GidTableEntry> table,
                                      const GidSelectionPolicy& policy,
                                      const std::optional<Cidr>& range) {
  const GidTableEntry* best = nullptr;
  for (const GidTableEntry& entry : table) {
    if (entry.type != GidType::RoceV2 || !usable_address(entry, policy.family)) {
      continue;
    }
    if (range && !range->contains(entry.gid)) {
      continue;
    }
    if (best == nullptr || entry.index < best->index) {
      best = &entry;
    }
  }
  return best;
}

std::string describe(const GidTableEntry& entry) {
  return std::to_string(entry.index) + " " + gid_to_string(entry.gid) + " (" +
         gid_type_name(entry.type) + ")";
}

std::string list_table(std::span<const GidTableEntry> table) {
  std::string text;
  size_t listed = 0;
  for (const GidTableEntry& entry : table) {
    if (is_zero(entry.gid)) {
      continue;
    }
    if (listed == kMaxListedEntries) {
      text += ", ...";
      break;
    }
    if (listed != 0) {
      text += ", ";
    }
    text += describe(entry);  // appended: a prepended temporary trips GCC 12's -O3 warnings
    ++listed;
  }
  return text.empty() ? "no entries" : text;
}

// Why the automatic choice found nothing, and what would work instead.
std::string no_automatic_choice(std::span<const GidTableEntry> table,
                                const GidSelectionPolicy& policy,
                                const std::optional<Cidr>& range) {
  std::string wanted = std::string("a RoCE v2 GID of family ") + family_setting(policy.family);
  if (range) {
    wanted += " inside NCCL_IB_ADDR_RANGE=" + policy.addr_range;
  }
  std::string text = "no usable GID" + location(policy) + ": wanted " + wanted +
                     ", the table holds " + list_table(table) + "; ";

  const AddressFamily other =
      policy.family == AddressFamily::Ipv4 ? AddressFamily::Ipv6 : AddressFamily::Ipv4;
  GidSelectionPolicy without_range = policy;
  without_range.addr_range.clear();
  if (range) {
    if (const GidTableEntry* outside = automatic_choice(table, without_range, std::nullopt)) {
      return text + "index " + std::to_string(outside->index) + " (" + gid_to_string(outside->gid) +
             ") is RoCE v2 but outside the range: widen or unset NCCL_IB_ADDR_RANGE";
    }
  }
  GidSelectionPolicy other_family = without_range;
  other_family.family = other;
  if (const GidTableEntry* alt = automatic_choice(table, other_family, std::nullopt)) {
    return text + "set NCCL_IB_ADDR_FAMILY=" + family_setting(other) + " to use index " +
           std::to_string(alt->index) + " (" + gid_to_string(alt->gid) + ")";
  }
  std::string unknown;
  for (const GidTableEntry& entry : table) {
    if (entry.type == GidType::Unknown && usable_address(entry, policy.family)) {
      unknown += (unknown.empty() ? "" : ", ") + std::to_string(entry.index);
    }
  }
  if (!unknown.empty()) {
    return text + "the type of index " + unknown +
           " could not be read (sysfs gid_attrs hidden, as in some containers); if one is "
           "RoCE v2, name it with NCCL_IB_GID_INDEX";
  }
  return text + "give the port's network interface an " + family_name(policy.family) +
         " address so the NIC adds RoCE v2 GIDs for it";
}

// The " use NCCL_IB_GID_INDEX=N (...) or unset it" part of an override error.
std::string instead(const GidTableEntry* named, const GidTableEntry* choice,
                    const GidSelectionPolicy& policy) {
  if (choice == nullptr) {
    return "no RoCE v2 GID of family " + std::string(family_setting(policy.family)) + " is usable" +
           location(policy) + "; unset NCCL_IB_GID_INDEX to see why";
  }
  const bool same = named != nullptr && named->gid == choice->gid;
  return "use NCCL_IB_GID_INDEX=" + std::to_string(choice->index) + " (RoCE v2, " +
         (same ? std::string("same address") : gid_to_string(choice->gid)) + ") or unset it";
}

Result<GidSelection> select_override(std::span<const GidTableEntry> table,
                                     const GidSelectionPolicy& policy,
                                     const GidTableEntry* choice) {
  const int index = policy.override_index;
  const std::string head = "NCCL_IB_GID_INDEX=" + std::to_string(index);
  const GidTableEntry* named = find_index(table, index);
  int last = -1;
  for (const GidTableEntry& entry : table) {
    last = std::max(last, entry.index);
  }
  if (named == nullptr && index > last) {
    return failure(head + " is past the GID table" + location(policy) +
                   (last < 0 ? std::string(" (the table is empty)")
                             : " (indices 0.." + std::to_string(last) + ")") +
                   "; " + instead(nullptr, choice, policy));
  }
  if (named == nullptr || is_zero(named->gid)) {
    return failure(head + " names an empty GID slot" + location(policy) + "; " +
                   instead(nullptr, choice, policy));
  }
  const std::string what = " (" + gid_to_string(named->gid) + ")" + location(policy);
  switch (named->type) {
    case GidType::RoceV1:
      return failure(head + " names a RoCE v1 GID" + what + "; RoCE v1 is not routable over UDP; " +
                     instead(named, choice, policy));
    case GidType::Ib:
      return failure(head + " names an InfiniBand GID" + what +
                     "; this plugin drives RoCE v2 ports only; " + instead(named, choice, policy));
    case GidType::RoceV2:
    case GidType::Unknown:
      break;
  }
  // NCCL uses an explicit index as given; so do we, with a warning where it is probably a mistake.
  std::string warning;
  if (is_link_local(named->gid)) {
    warning = head + " names a link-local GID" + what +
              "; used as given, as NCCL does, but it does not route beyond one L2 segment; " +
              instead(named, choice, policy);
  } else if (family_of(named->gid) != policy.family) {
    warning = head + " names an " + family_name(family_of(named->gid)) + " GID" + what +
              " but NCCL_IB_ADDR_FAMILY is " + family_setting(policy.family) +
              "; used as given, as NCCL does; " + instead(named, choice, policy);
  }
  return GidSelection{index, *named, named->type == GidType::Unknown, warning};
}

}  // namespace

Result<GidSelection> select_gid(std::span<const GidTableEntry> table,
                                const GidSelectionPolicy& policy) {
  if (policy.roce_version != 2) {
    return failure("RoCE version " + std::to_string(policy.roce_version) +
                   " requested; this plugin runs RoCE v2 only (unset NCCL_IB_ROCE_VERSION_NUM)");
  }
  std::optional<Cidr> range;
  if (!policy.addr_range.empty()) {
    const Result<Cidr> parsed = parse_cidr(policy.addr_range);
    if (!parsed) {
      return failure("NCCL_IB_ADDR_RANGE=" + policy.addr_range +
                     " is malformed: " + parsed.error());
    }
    range = *parsed;
  }
  const GidTableEntry* choice = automatic_choice(table, policy, range);
  if (policy.override_index >= 0) {
    return select_override(table, policy, choice);
  }
  if (choice == nullptr) {
    return failure(no_automatic_choice(table, policy, range));
  }
  return GidSelection{choice->index, *choice, false, {}};
}

std::string gid_to_string(const std::array<uint8_t, 16>& gid) {
  // Always the IPv6 form, so an IPv4-mapped GID reads "::ffff:10.0.0.1" as in sysfs tools.
  if (is_ipv4_mapped(gid)) {
    return "::ffff:" + address_to_string(gid);
  }
  return address_to_string(gid);
}

const char* gid_type_name(GidType type) {
  switch (type) {
    case GidType::RoceV1:
      return "RoCE v1";
    case GidType::RoceV2:
      return "RoCE v2";
    case GidType::Ib:
      return "IB";
    case GidType::Unknown:
      break;
  }
  return "unknown type";
}

}  // namespace roce
