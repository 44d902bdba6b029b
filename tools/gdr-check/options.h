// Command line of gdr-check, parsed without side effects so errors are reported before any
// device is opened.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace gdr {

enum class OutputFormat { Text, Brief, Json };

struct Options {
  std::string device;      // --dev: first RDMA device when empty
  std::string device2;     // --dev2: the responder's device; same as device when empty
  int port = 1;            // --port
  int gid_index = -1;      // --gid-index: -1 = first RoCE v2 IPv4 GID
  int gpu = 0;             // --gpu: CUDA device ordinal
  size_t size = 8u << 20;  // --size: bytes per transfer
  int iterations = 20;     // --iters: transfers timed per mode and direction
  int traffic_class = 0;   // --tc
  OutputFormat format = OutputFormat::Text;
};

// Parses argv. On error returns std::nullopt with *error set; on --help sets *help.
std::optional<Options> parse_options(int argc, char** argv, std::string* error, bool* help);

const char* usage_text();

}  // namespace gdr
