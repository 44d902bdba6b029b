// The tools' one JSON writer (roce-bench --json, gdr-check --json, pcap-icrc-check --json): a
// streaming builder of objects and arrays in the order written, compact, whose strings and
// numbers are encoded by nlohmann/json (Debian's nlohmann-json3-dev): RFC 8259 escaping, invalid
// UTF-8 replaced by U+FFFD rather than thrown, non-finite doubles as null, finite ones rounded to
// six significant digits (figures, not data).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace roce::tools {

class JsonWriter {
 public:
  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view name);
  JsonWriter& value(std::string_view text);
  JsonWriter& value(const char* text) { return value(std::string_view(text)); }
  JsonWriter& value(std::int64_t number);
  JsonWriter& value(std::uint64_t number);
  JsonWriter& value(int number) { return value(static_cast<std::int64_t>(number)); }
  JsonWriter& value(unsigned number) { return value(static_cast<std::uint64_t>(number)); }
  JsonWriter& value(double number);
  JsonWriter& value(bool flag);
  JsonWriter& null();

  const std::string& str() const { return out_; }

 private:
  void separate();
  std::string out_;
  std::vector<bool> first_;  // per open container: no element written yet
  bool after_key_ = false;
};

// `text` as one JSON string, quotes included (for a quoted field in a text report).
std::string json_string(std::string_view text);

}  // namespace roce::tools
