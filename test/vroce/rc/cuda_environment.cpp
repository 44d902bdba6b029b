// The CUDA-path suite runs two vroce devices on its own loopback addresses; they must
// be configured before vroce reads its environment (at the first verbs call).
#include <cstdlib>

#include "test_environment.h"

void roce_test_environment() {
  setenv("VROCE_DEVICES", "vrC1=127.0.3.70,vrC2=127.0.3.71", 1);
}
