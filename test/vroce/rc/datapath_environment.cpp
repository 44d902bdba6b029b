// The in-process data-path suite runs two vroce devices on its own loopback addresses; they must
// be configured before vroce reads its environment (at the first verbs call).
#include <cstdlib>

#include "test_environment.h"

void roce_test_environment() {
  setenv("VROCE_DEVICES", "vrA=127.0.3.20,vrB=127.0.3.21", 1);
}
