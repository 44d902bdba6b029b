// The in-process data-path suite runs two vroce devices on its own loopback addresses; they must
// be configured before vroce reads its environment (at the first verbs call).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstdlib>

int main(int argc, char** argv) {
  setenv("VROCE_DEVICES", "vrA=127.0.3.20,vrB=127.0.3.21", 1);
  return Catch::Session().run(argc, argv);
}
