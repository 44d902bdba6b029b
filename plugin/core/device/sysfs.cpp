// sysfs readers: see sysfs.h.
#include "core/device/sysfs.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>

#include "util/text.h"

namespace roce::sysfs {
namespace {

// "dddd:bb:dd.f" with a domain of four or more hex digits (VMD domains have five).
bool looks_like_pci_function(std::string_view name) noexcept {
  const size_t colon1 = name.find(':');
  if (colon1 == std::string_view::npos || colon1 < 4) {
    return false;
  }
  auto all_hex = [](std::string_view text) {
    for (char c : text) {
      const bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
      if (!hex) {
        return false;
      }
    }
    return !text.empty();
  };
  const std::string_view rest = name.substr(colon1 + 1);  // "bb:dd.f"
  return all_hex(name.substr(0, colon1)) && rest.size() == 7 && all_hex(rest.substr(0, 2)) &&
         rest[2] == ':' && all_hex(rest.substr(3, 2)) && rest[5] == '.' && rest[6] >= '0' &&
         rest[6] <= '7';
}

std::optional<std::string> real_path(const std::string& path) {
  char resolved[PATH_MAX];
  if (realpath(path.c_str(), resolved) == nullptr) {
    return std::nullopt;
  }
  return std::string(resolved);
}

bool is_directory(const std::string& path) noexcept {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool exists(const std::string& path) noexcept {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0;
}

}  // namespace

std::string device_dir(const std::string& root, const std::string& device) {
  return fmt::format("{}/class/infiniband/{}", root, device);
}

std::optional<std::string> read_attribute(const std::string& path, int* error_number) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *error_number = errno;
    return std::nullopt;
  }
  std::string content;
  char buffer[4096];
  for (;;) {
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      *error_number = errno;
      close(fd);
      return std::nullopt;
    }
    if (n == 0) {
      break;
    }
    content.append(buffer, static_cast<size_t>(n));
    if (content.size() > 1 << 20) {  // sysfs attributes are at most a page; this is not one
      *error_number = EFBIG;
      close(fd);
      return std::nullopt;
    }
  }
  close(fd);
  *error_number = 0;
  return content;
}

PciPath resolve_pci_path(const std::string& root, const std::string& device) {
  const std::string link = device_dir(root, device) + "/device";
  const auto resolved = real_path(link);
  if (!resolved) {
    return {std::nullopt, fmt::format("{} does not resolve ({})", link, strerrordesc_np(errno))};
  }
  const std::string_view name = std::string_view(*resolved).substr(resolved->rfind('/') + 1);
  if (!is_directory(*resolved) || !looks_like_pci_function(name)) {
    return {std::nullopt,
            fmt::format("{} resolves to {}, which is not a PCI function", link, *resolved)};
  }
  const std::string subsystem_link = *resolved + "/subsystem";
  if (exists(subsystem_link)) {
    const auto subsystem = real_path(subsystem_link);
    if (!subsystem || !subsystem->ends_with("/bus/pci")) {
      return {std::nullopt,
              fmt::format("{} resolves to {}, whose subsystem is {}, not the PCI bus", link,
                          *resolved, subsystem ? *subsystem : std::string("unresolvable"))};
    }
  } else if (!exists(*resolved + "/vendor")) {
    return {std::nullopt, fmt::format("{} resolves to {}, which has neither a subsystem link nor "
                                      "a vendor attribute",
                                      link, *resolved)};
  }
  return {*resolved, {}};
}

GidType parse_gid_type(std::string_view text) noexcept {
  // A sysfs attribute ends in a newline, and NULs may follow it.
  using namespace std::string_view_literals;
  text = trim_front(trim_back(text, " \t\n\0"sv), " \t");
  if (text == "RoCE v2") {
    return GidType::RoceV2;
  }
  if (text == "RoCE v1" || text == "IB/RoCE v1") {
    return GidType::RoceV1;
  }
  return GidType::Unknown;
}

GidType read_gid_type(const std::string& root, const std::string& device, int port, int index) {
  int error_number = 0;
  const auto text = read_attribute(
      fmt::format("{}/ports/{}/gid_attrs/types/{}", device_dir(root, device), port, index),
      &error_number);
  return text ? parse_gid_type(*text) : GidType::Unknown;
}

}  // namespace roce::sysfs
