// Argument parsing for gdr-check.
#include "options.h"

#include <charconv>
#include <string_view>

namespace gdr {
namespace {

template <typename T>
bool parse_number(std::string_view text, T min, T max, T* out) {
  T value{};
  const auto* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || value < min || value > max)
    return false;
  *out = value;
  return true;
}

}  // namespace

const char* usage_text() {
  return "Usage: gdr-check [--dev NAME] [--dev2 NAME] [--port N] [--gid-index N] [--gpu N]\n"
         "                 [--size BYTES] [--iters N] [--tc N] [--json | --brief]\n"
         "\n"
         "Allocates GPU memory with the CUDA runtime, registers it with the RDMA NIC by pointer\n"
         "(ibv_reg_mr, needs nvidia-peermem) and by dma-buf (cuMemGetHandleForAddressRange, then\n"
         "ibv_reg_dmabuf_mr), and runs RDMA WRITE and READ through it between two local RC queue\n"
         "pairs (on one device, or from --dev to --dev2), checking the data. Prints which\n"
         "GPUDirect RDMA modes work and their bandwidth.\n"
         "\n"
         "  --dev NAME      requester device (default: the first RDMA device)\n"
         "  --dev2 NAME     responder device (default: --dev)\n"
         "  --port N        port on both devices (default 1)\n"
         "  --gid-index N   GID index on both devices (default: first RoCE v2 IPv4 GID)\n"
         "  --gpu N         CUDA device (default 0)\n"
         "  --size BYTES    bytes per transfer (default 8388608)\n"
         "  --iters N       timed transfers per mode and direction (default 20)\n"
         "  --tc N          traffic class of the queue pairs (default 0)\n"
         "  --json          one JSON document\n"
         "  --brief         one line per mode: mode=NAME status=ok|fail ...\n"
         "\n"
         "Exit status: 0 at least one GPUDirect mode works; 1 none works; 2 bad usage;\n"
         "3 no usable CUDA GPU; 4 no usable RDMA device or port.\n";
}

std::optional<Options> parse_options(int argc, char** argv, std::string* error, bool* help) {
  Options o;
  *help = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    auto value = [&](std::string_view name) -> std::optional<std::string_view> {
      if (i + 1 >= argc) {
        *error = std::string(name) + " needs a value";
        return std::nullopt;
      }
      return std::string_view(argv[++i]);
    };
    auto number = [&](std::string_view name, auto min, auto max, auto* out) {
      auto v = value(name);
      if (!v)
        return false;
      if (!parse_number(*v, min, max, out)) {
        *error = std::string(name) + " '" + std::string(*v) + "' is not a number in " +
                 std::to_string(min) + ".." + std::to_string(max);
        return false;
      }
      return true;
    };
    if (arg == "--help" || arg == "-h") {
      *help = true;
      return o;
    } else if (arg == "--json") {
      o.format = OutputFormat::Json;
    } else if (arg == "--brief") {
      o.format = OutputFormat::Brief;
    } else if (arg == "--dev" || arg == "--dev2") {
      auto v = value(arg);
      if (!v)
        return std::nullopt;
      (arg == "--dev" ? o.device : o.device2) = std::string(*v);
    } else if (arg == "--port") {
      if (!number(arg, 1, 255, &o.port))
        return std::nullopt;
    } else if (arg == "--gid-index") {
      if (!number(arg, 0, 1023, &o.gid_index))
        return std::nullopt;
    } else if (arg == "--gpu") {
      if (!number(arg, 0, 1023, &o.gpu))
        return std::nullopt;
    } else if (arg == "--size") {
      if (!number(arg, size_t{4096}, size_t{1} << 32, &o.size))
        return std::nullopt;
    } else if (arg == "--iters") {
      if (!number(arg, 1, 100000, &o.iterations))
        return std::nullopt;
    } else if (arg == "--tc") {
      if (!number(arg, 0, 255, &o.traffic_class))
        return std::nullopt;
    } else {
      *error = "unknown argument '" + std::string(arg) + "'";
      return std::nullopt;
    }
  }
  return o;
}

}  // namespace gdr
