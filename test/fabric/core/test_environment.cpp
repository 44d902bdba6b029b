// Process set-up of the core fabric tests: points the plugin at the backend's libibverbs (vroce's,
// or the operator's under ROCE_TEST_BACKEND=hw) and the built .so (unless the caller already
// chose), so the binary runs the same under ctest and by hand.
#include "test_environment.h"

#include <cstdlib>

#include "test_backend.h"

void roce_test_environment() {
  roce::test::prepare_test_backend(ROCE_VROCE_LIBRARY);
  setenv("ROCE_PLUGIN_PATH", ROCE_PLUGIN_LIBRARY, 0);
  setenv("ROCE_FABRIC_PEER", ROCE_FABRIC_PEER_PATH, 0);
}
