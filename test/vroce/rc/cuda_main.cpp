// The CUDA-path suite runs two vroce devices on its own loopback addresses; they must
// be configured before vroce reads its environment (at the first verbs call).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstdlib>

int main(int argc, char** argv) {
  setenv("VROCE_DEVICES", "vrC1=127.0.3.70,vrC2=127.0.3.71", 1);
  return Catch::Session().run(argc, argv);
}
