// docs/configuration.md cannot drift from the registry: its generated part must equal
// settings_markdown() byte for byte.
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <string>

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
