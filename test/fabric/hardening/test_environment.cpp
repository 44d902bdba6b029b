// Process set-up of the hardening tests: points the plugin at the vroce library, the built .so
// and the fabric peer (unless the caller already chose), so the binary runs the same under ctest
// and by hand.
#include "test_environment.h"

#include <cstdlib>

void roce_test_environment() {
  setenv("NCCL_IBVERBS_LIB", ROCE_VROCE_LIBRARY, 0);
  setenv("ROCE_PLUGIN_PATH", ROCE_PLUGIN_LIBRARY, 0);
  setenv("ROCE_FABRIC_PEER", ROCE_FABRIC_PEER_PATH, 0);
}
