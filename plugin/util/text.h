// Trimming for the plugin's parsers (settings, NCCL_IB_HCA, sysfs attributes, the mlx5
// traffic-class override file): the one definition, each caller naming what its text may be
// padded with.
#pragma once

#include <string_view>

namespace roce {

// What isspace() takes in the C locale.
inline constexpr std::string_view kWhitespace = " \t\n\v\f\r";

// `text` without the characters of `chars` at its start. An all-padding text gives an empty view
// at its end (the view still points into `text`).
std::string_view trim_front(std::string_view text, std::string_view chars = kWhitespace) noexcept;

// `text` without the characters of `chars` at its end.
std::string_view trim_back(std::string_view text, std::string_view chars = kWhitespace) noexcept;

// `text` without the characters of `chars` at either end.
std::string_view trim(std::string_view text, std::string_view chars = kWhitespace) noexcept;

}  // namespace roce
