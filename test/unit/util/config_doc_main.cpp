// roce_config_doc: rewrites the generated settings tables of docs/configuration.md from the
// registry (util/config_registry.cpp). Usage: roce_config_doc <path to configuration.md>
// The unit test "docs/configuration.md matches the settings registry" fails until this is run.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "config_doc_markers.h"
#include "util/config.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <docs/configuration.md>\n", argv[0]);
    return 2;
  }
  std::ifstream in(argv[1]);
  if (!in) {
    std::fprintf(stderr, "roce_config_doc: cannot read %s\n", argv[1]);
    return 1;
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  const size_t begin = text.find(roce::test::kDocBeginMarker);
  const size_t end = text.find(roce::test::kDocEndMarker);
  if (begin == std::string::npos || end == std::string::npos || end < begin) {
    std::fprintf(stderr, "roce_config_doc: %s lacks the markers\n  %s\n  %s\n", argv[1],
                 roce::test::kDocBeginMarker, roce::test::kDocEndMarker);
    return 1;
  }
  const size_t body = begin + std::string(roce::test::kDocBeginMarker).size();
  const std::string updated =
      text.substr(0, body) + "\n" + roce::settings_markdown() + text.substr(end);
  std::ofstream out(argv[1], std::ios::trunc);
  out << updated;
  if (!out) {
    std::fprintf(stderr, "roce_config_doc: cannot write %s\n", argv[1]);
    return 1;
  }
  std::printf("roce_config_doc: %s updated\n", argv[1]);
  return 0;
}
