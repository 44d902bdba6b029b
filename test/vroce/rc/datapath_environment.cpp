// The in-process data-path suite runs two vroce devices on the process's loopback addresses; they
// must be configured before vroce reads its environment (at the first verbs call).
#include <cstdlib>

#include "test_addresses.h"
#include "test_environment.h"

void roce_test_environment() {
  setenv("VROCE_DEVICES", roce::test::vroce_device_list({"vrA", "vrB"}).c_str(), 1);
}
