// docs/configuration.md cannot drift from the registry: its generated part must equal
// settings_markdown() byte for byte.
#include <catch2/catch.hpp>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>

#include "config_doc_markers.h"
#include "util/config.h"

TEST_CASE("docs/configuration.md matches the settings registry", "[config][docs]") {
  const std::string path = std::string(ROCE_SOURCE_DIR) + "/docs/configuration.md";
  std::ifstream in(path);
  REQUIRE(in.good());
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  const size_t begin = text.find(roce::test::kDocBeginMarker);
  const size_t end = text.find(roce::test::kDocEndMarker);
  REQUIRE(begin != std::string::npos);
  REQUIRE(end != std::string::npos);
  REQUIRE(begin < end);
  const size_t body = begin + std::string(roce::test::kDocBeginMarker).size();
  const std::string committed = text.substr(body, end - body);
  INFO(
      "docs/configuration.md is out of date; regenerate it with: "
      "build/ci/test/unit/roce_config_doc docs/configuration.md");
  CHECK(committed == "\n" + roce::settings_markdown());
}

TEST_CASE("the rendered settings table has one row per setting and no stray separators",
          "[config][docs]") {
  const std::string table = roce::settings_markdown();
  for (const roce::SettingInfo& info : roce::settings()) {
    INFO(info.name);
    CHECK(table.find("| `" + std::string(info.name) + "` |") != std::string::npos);
  }
  std::istringstream lines(table);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("| `NCCL_", 0) == 0 && line.find("What the plugin") == std::string::npos) {
      size_t columns = 0;
      for (size_t i = 0; i < line.size(); ++i) {
        if (line[i] == '|' && (i == 0 || line[i - 1] != '\\')) {
          ++columns;
        }
      }
      INFO(line);
      CHECK((columns == 8 || columns == 3));
    }
  }
}

namespace {

std::optional<std::string> lookup_one(std::string_view name, void* user) {
  const auto& setting = *static_cast<const std::pair<std::string, std::string>*>(user);
  if (name == setting.first) {
    return setting.second;
  }
  return std::nullopt;
}

}  // namespace

TEST_CASE("the setting errors the docs quote are the ones the plugin gives", "[config][docs]") {
  // Every `NAME=VALUE is out of range; ...` quoted in a doc, word for word.
  int quoted = 0;
  for (const char* doc : {"/docs/configuration.md", "/docs/troubleshooting.md"}) {
    std::ifstream in(std::string(ROCE_SOURCE_DIR) + doc);
    REQUIRE(in.good());
    std::stringstream buffer;
    buffer << in.rdbuf();
    const std::string text = buffer.str();
    for (size_t at = text.find("`NCCL_"); at != std::string::npos;
         at = text.find("`NCCL_", at + 1)) {
      const size_t close = text.find('`', at + 1);
      const std::string quote = text.substr(at + 1, close - at - 1);
      const size_t eq = quote.find('=');
      const size_t space = quote.find(' ');
      if (quote.find(" is out of range; accepted: ") == std::string::npos || eq > space) {
        continue;
      }
      ++quoted;
      std::pair<std::string, std::string> setting{quote.substr(0, eq),
                                                  quote.substr(eq + 1, space - eq - 1)};
      const roce::Result<roce::Config> config = roce::parse_config(&lookup_one, &setting);
      INFO(doc << ": " << quote);
      REQUIRE_FALSE(config.has_value());
      CHECK(config.error().find(quote) != std::string::npos);
    }
  }
  CHECK(quoted >= 2);
}
