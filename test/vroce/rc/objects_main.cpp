// The in-process object suite runs one vroce device on its own loopback addresses; it must
// be configured before vroce reads its environment (at the first verbs call).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstdlib>

int main(int argc, char** argv) {
  setenv("VROCE_DEVICES", "vrO=127.0.3.10", 1);
  return Catch::Session().run(argc, argv);
}
