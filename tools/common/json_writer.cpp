// The tools' JSON writer: see json_writer.h.
#include "json_writer.h"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

namespace roce::tools {
namespace {

std::string encoded(const nlohmann::json& scalar) {
  return scalar.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

std::string json_string(std::string_view text) {
  return encoded(nlohmann::json(std::string(text)));
}

void JsonWriter::separate() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_.empty()) {
    if (!first_.back()) {
      out_ += ',';
    }
    first_.back() = false;
  }
}

JsonWriter& JsonWriter::begin_object() {
  separate();
  out_ += '{';
  first_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::end_object() {
  first_.pop_back();
  out_ += '}';
  return *this;
}

JsonWriter& JsonWriter::begin_array() {
  separate();
  out_ += '[';
  first_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::end_array() {
  first_.pop_back();
  out_ += ']';
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view name) {
  separate();
  out_ += json_string(name);
  out_ += ':';
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view text) {
  separate();
  out_ += json_string(text);
  return *this;
}

JsonWriter& JsonWriter::value(std::int64_t number) {
  separate();
  out_ += encoded(nlohmann::json(number));
  return *this;
}

JsonWriter& JsonWriter::value(std::uint64_t number) {
  separate();
  out_ += encoded(nlohmann::json(number));
  return *this;
}

JsonWriter& JsonWriter::value(double number) {
  separate();
  // Six significant digits, then nlohmann's shortest round-trip form of that (2.5, 0.000123).
  out_ += std::isfinite(number) ? encoded(nlohmann::json(std::stod(fmt::format("{:.6g}", number))))
                                : "null";
  return *this;
}

JsonWriter& JsonWriter::value(bool flag) {
  separate();
  out_ += flag ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::null() {
  separate();
  out_ += "null";
  return *this;
}

}  // namespace roce::tools
