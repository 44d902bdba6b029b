// The in-process object suite runs one vroce device on its own loopback addresses; it must
// be configured before vroce reads its environment (at the first verbs call).
#include <cstdlib>

#include "test_addresses.h"
#include "test_environment.h"

void roce_test_environment() {
  setenv("VROCE_DEVICES", roce::test::vroce_device_list({"vrO"}).c_str(), 1);
}
