// Trimming: see text.h.
#include "util/text.h"

namespace roce {

std::string_view trim_front(std::string_view text, std::string_view chars) noexcept {
  const size_t first = text.find_first_not_of(chars);
  text.remove_prefix(first == std::string_view::npos ? text.size() : first);
  return text;
}

std::string_view trim_back(std::string_view text, std::string_view chars) noexcept {
  const size_t last = text.find_last_not_of(chars);
  text.remove_suffix(last == std::string_view::npos ? text.size() : text.size() - last - 1);
  return text;
}

std::string_view trim(std::string_view text, std::string_view chars) noexcept {
  return trim_back(trim_front(text, chars), chars);
}

}  // namespace roce
