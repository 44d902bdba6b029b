// pcap-icrc-check: validates the RoCEv2 ICRC of every UDP/4791 packet of a capture (tshark
// shows the ICRC but never checks it) and summarises opcodes and DSCP/ECN values.
//
// Exit status: 0 when every RoCEv2 packet has a valid ICRC, 1 when one is invalid or cannot be
// verified (or, with --strict, has transport headers that do not parse), 2 when the file is not
// a readable capture or the command line is wrong.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "capture_reader.h"
#include "checker.h"
#include "report.h"

namespace {

constexpr int kExitOk = 0;
constexpr int kExitInvalid = 1;
constexpr int kExitBadInput = 2;

void usage(std::FILE* out) {
  std::fprintf(out,
               "usage: pcap-icrc-check [--json] [--strict] [--max-problems N] CAPTURE\n"
               "Validates the RoCEv2 ICRC of every UDP packet to port 4791 in CAPTURE (pcap or\n"
               "pcapng; Ethernet, Linux cooked SLL/SLL2 or raw IP) and prints a summary.\n"
               "  --json            print the summary as one JSON object\n"
               "  --strict          also fail on packets whose transport headers do not parse\n"
               "  --max-problems N  list at most N problem packets (default 20)\n"
               "exit status: 0 all valid, 1 invalid or unverifiable packets, 2 unreadable input\n");
}

vroce::Status read_file(const std::string& path, std::vector<std::uint8_t>* out) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    return vroce::failure("cannot open " + path + ": " + std::strerror(errno));
  }
  std::uint8_t chunk[65536];
  std::size_t n;
  while ((n = std::fread(chunk, 1, sizeof chunk, f)) > 0) {
    out->insert(out->end(), chunk, chunk + n);
  }
  const bool ok = std::ferror(f) == 0;
  std::fclose(f);
  if (!ok) {
    return vroce::failure("cannot read " + path);
  }
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  bool json = false;
  bool strict = false;
  std::size_t max_problems = 20;
  std::string path;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--json") {
      json = true;
    } else if (arg == "--strict") {
      strict = true;
    } else if (arg == "--max-problems" && i + 1 < argc) {
      char* end = nullptr;
      const unsigned long n = std::strtoul(argv[++i], &end, 10);
      if (end == argv[i] || *end != '\0') {
        std::fprintf(stderr, "pcap-icrc-check: --max-problems needs a number, got '%s'\n", argv[i]);
        return kExitBadInput;
      }
      max_problems = n;
    } else if (arg == "-h" || arg == "--help") {
      usage(stdout);
      return kExitOk;
    } else if (!arg.empty() && arg[0] == '-') {
      std::fprintf(stderr, "pcap-icrc-check: unknown option '%s'\n", argv[i]);
      usage(stderr);
      return kExitBadInput;
    } else if (path.empty()) {
      path = arg;
    } else {
      std::fprintf(stderr, "pcap-icrc-check: one capture file at a time\n");
      return kExitBadInput;
    }
  }
  if (path.empty()) {
    usage(stderr);
    return kExitBadInput;
  }

  std::vector<std::uint8_t> bytes;
  if (const vroce::Status read = read_file(path, &bytes); !read) {
    std::fprintf(stderr, "pcap-icrc-check: %s\n", read.error().c_str());
    return kExitBadInput;
  }
  auto reader = vroce::pcapcheck::CaptureReader::open(bytes);
  if (!reader) {
    std::fprintf(stderr, "pcap-icrc-check: %s: %s\n", path.c_str(), reader.error().c_str());
    return kExitBadInput;
  }
  vroce::pcapcheck::Checker checker(max_problems);
  checker.summary().format = reader->format_name();
  vroce::pcapcheck::Frame frame;
  for (;;) {
    const auto next = reader->next(&frame);
    if (next && *next == vroce::pcapcheck::CaptureReader::Next::End) {
      break;
    }
    // A malformed record, or a frame of a link type this tool cannot read.
    const vroce::Status added = next.and_then([&](auto) { return checker.add(frame); });
    if (!added) {
      std::fprintf(stderr, "pcap-icrc-check: %s: malformed capture: %s\n", path.c_str(),
                   added.error().c_str());
      return kExitBadInput;
    }
  }
  const auto& s = checker.summary();
  if (json) {
    vroce::pcapcheck::print_json(stdout, path, s);
  } else {
    vroce::pcapcheck::print_text(stdout, path, s);
  }
  const bool failed = s.invalid > 0 || s.unverifiable > 0 || (strict && s.structure_errors > 0);
  return failed ? kExitInvalid : kExitOk;
}
