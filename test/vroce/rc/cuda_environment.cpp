// The CUDA-path suite runs two vroce devices on its own loopback addresses, with a short stall
// warning delay; both must be set before vroce reads its environment (at the first verbs call).
// Built twice (test/vroce/rc/CMakeLists.txt): with copies made in this process, and with
// ROCE_TEST_HELPER_COPIES by vroce's copy helper, which must find the stand-in driver too.
#include <cstdlib>
#include <string>

#include "test_addresses.h"
#include "test_environment.h"

void roce_test_environment() {
  setenv("VROCE_DEVICES", roce::test::vroce_device_list({"vrC1", "vrC2"}).c_str(), 1);
  // The stall watchdog's test holds a copy for well over this.
  setenv("VROCE_GPU_STALL_WARN_MS", "300", 1);
#ifdef ROCE_TEST_HELPER_COPIES
  setenv("VROCE_GPU_COPIES", "helper", 1);
  setenv("VROCE_GPU_COPIER", ROCE_TEST_GPU_COPIER, 1);
  // The helper is another program: it finds the stand-in libcuda.so.1 by the loader's path.
  const char* path = std::getenv("LD_LIBRARY_PATH");
  std::string dirs = ROCE_TEST_FAKE_CUDA_DIR;
  if (path != nullptr && *path != '\0') {
    dirs += std::string(":") + path;
  }
  setenv("LD_LIBRARY_PATH", dirs.c_str(), 1);
#else
  setenv("VROCE_GPU_COPIES", "in-process", 1);
#endif
}
