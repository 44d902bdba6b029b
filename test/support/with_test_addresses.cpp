// with_test_addresses [--vroce-devices NAME[,NAME...]] [--] COMMAND [ARG...]
//
// Runs COMMAND inside a block of loopback addresses claimed for it (test_addresses.h), for test
// scripts (shell, Python) that cannot hold a claim themselves: the block's addresses are in
// ROCE_TEST_ADDRESSES, and with --vroce-devices VROCE_DEVICES names one device per address from
// the first. COMMAND replaces this process and inherits the claim's socket, so the block is
// taken until COMMAND and every child that inherited it have exited. Exits 2 with one line on
// a usage error, 1 when no block can be claimed, else as COMMAND.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <sstream>
#include <string>
#include <vector>

#include "test_addresses.h"

namespace {

int usage(const char* why) {
  std::fprintf(stderr,
               "with_test_addresses: %s\nusage: with_test_addresses [--vroce-devices "
               "NAME[,NAME...]] [--] COMMAND [ARG...]\n",
               why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> device_names;
  int i = 1;
  for (; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg == "--vroce-devices") {
      if (i + 1 >= argc) {
        return usage("--vroce-devices needs a comma-separated list of names");
      }
      std::istringstream names(argv[++i]);
      for (std::string name; std::getline(names, name, ',');) {
        device_names.push_back(name);
      }
      continue;
    }
    if (arg.rfind("--", 0) == 0) {
      return usage(("unknown option " + arg).c_str());
    }
    break;
  }
  if (i >= argc) {
    return usage("no command given");
  }
  if (device_names.size() > static_cast<size_t>(roce::test::kAddressesPerBlock)) {
    return usage("more --vroce-devices names than a block has addresses");
  }
  try {
    std::string devices;
    for (size_t d = 0; d < device_names.size(); ++d) {
      devices += (d == 0 ? "" : ",") + device_names[d] + "=" +
                 roce::test::test_address(static_cast<int>(d));
    }
    if (!device_names.empty()) {
      setenv("VROCE_DEVICES", devices.c_str(), 1);
    }
    roce::test::test_address(0);  // claims the block and exports ROCE_TEST_ADDRESSES
  } catch (const std::exception& e) {
    std::fprintf(stderr, "with_test_addresses: %s\n", e.what());
    return 1;
  }
  execvp(argv[i], argv + i);
  std::fprintf(stderr, "with_test_addresses: cannot run %s: %s\n", argv[i], std::strerror(errno));
  return 127;
}
