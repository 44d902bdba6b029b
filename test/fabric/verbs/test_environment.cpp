// Process set-up of the verbs-layer tests: they load vroce's libibverbs.so.1 themselves and reach
// into it (its fake sysfs, its port events), so every one is tagged [vroce]; under
// ROCE_TEST_BACKEND=hw the backend switch leaves them out (test_backend.h).
#include "test_environment.h"

#include "test_backend.h"

void roce_test_environment() {
  roce::test::prepare_test_backend(VROCE_LIBRARY_PATH);
}
