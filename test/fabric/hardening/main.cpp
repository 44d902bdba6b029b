// Catch2's runner for the hardening tests: points the plugin at the vroce library, the built .so
// and the fabric peer (unless the caller already chose), so the binary runs the same under ctest
// and by hand.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstdlib>

int main(int argc, char** argv) {
  setenv("NCCL_IBVERBS_LIB", ROCE_VROCE_LIBRARY, 0);
  setenv("ROCE_PLUGIN_PATH", ROCE_PLUGIN_LIBRARY, 0);
  setenv("ROCE_FABRIC_PEER", ROCE_FABRIC_PEER_PATH, 0);
  return Catch::Session().run(argc, argv);
}
