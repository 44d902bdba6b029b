// The in-process data-path suite runs two vroce devices on the process's loopback addresses; they
// must be configured before vroce reads its environment (at the first verbs call).
#include <cstdlib>

#include "test_addresses.h"
#include "test_environment.h"

void roce_test_environment() {
  setenv("VROCE_DEVICES", roce::test::vroce_device_list({"vrA", "vrB"}).c_str(), 1);
  // The progress threads spin after activity here, as on a machine of 4 or more CPUs (the
  // default spins only there): so this suite, which the sanitizer builds run too, covers the
  // spinning thread racing the polling one, while the two-process suites cover the 2-core
  // default of no spin. The caller's own setting wins.
  setenv("VROCE_SPIN_US", "50", 0);
#ifdef ROCE_TEST_SHM_WIRE
  // The same suite with the two devices on the shared-memory wire (packet_io/shm_wire.h).
  setenv("VROCE_WIRE", "shm", 1);
#endif
}
