// The CUDA-path suite runs two vroce devices on its own loopback addresses, with a short stall
// warning delay; both must be set before vroce reads its environment (at the first verbs call).
#include <cstdlib>

#include "test_addresses.h"
#include "test_environment.h"

void roce_test_environment() {
  setenv("VROCE_DEVICES", roce::test::vroce_device_list({"vrC1", "vrC2"}).c_str(), 1);
  // The stall watchdog's test holds a copy for well over this.
  setenv("VROCE_GPU_STALL_WARN_MS", "300", 1);
}
