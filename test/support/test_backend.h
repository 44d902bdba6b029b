// Which NICs the fabric suites run on: vroce (the default, every test) or the operator's RDMA
// NICs (ROCE_TEST_BACKEND=hw), so that the same tests check the plugin on real hardware.
//
//   ROCE_TEST_BACKEND      vroce (default) or hw
//   ROCE_TEST_HW_DEVICES   hw: the verbs devices the tests use, in order, comma-separated
//                          (mlx5_0,mlx5_1): the first is a test's first device ("pca"), the
//                          second its second ("pcb"), ... Two ports that reach each other over
//                          the fabric (two NICs of one host, or two ports of one NIC).
//   ROCE_TEST_HW_IBVERBS_LIB  hw: the libibverbs the plugin loads (default libibverbs.so.1,
//                          rdma-core's, found on the library path)
//
// Tests name their devices by role ("pca", "pcb", "hda"); use_test_devices() makes those the
// process's devices (vroce devices of those names on the process's own loopback addresses, or the
// operator's devices selected with NCCL_IB_HCA) and test_device_name() gives the name the plugin
// reports for a role. Tests that need what only vroce has (fault injection, its fake sysfs, port
// events, its counters, a device of its own per process) carry the Catch2 tag [vroce]: under hw
// they are skipped (exit 77, which ctest reports as skipped), never run against a NIC they would
// misjudge.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>

namespace roce::test {

enum class TestBackend { Vroce, Hw };

// ROCE_TEST_BACKEND; throws std::runtime_error naming the variable and the accepted values.
TestBackend test_backend();

// Makes `roles` this process's devices, in order (see above). Throws std::runtime_error when hw
// has fewer ROCE_TEST_HW_DEVICES than roles, or more roles than a vroce address block holds.
void use_test_devices(std::initializer_list<std::string_view> roles);

// The device name the plugin reports for `role`: `role` itself over vroce, the operator's device
// given to it by use_test_devices() under hw (`role` unchanged when it was given none).
std::string test_device_name(const std::string& role);

// For an executable's roce_test_environment(): points the plugin at vroce's library
// (`vroce_library`) or, under hw, at ROCE_TEST_HW_IBVERBS_LIB; unless the caller already set
// NCCL_IBVERBS_LIB.
void prepare_test_backend(const char* vroce_library);

}  // namespace roce::test

// Read by catch_main.cpp through weak references (so defined only in executables that use this
// library), after the command line is parsed and unless tests are only listed:
// - what is wrong with the backend's settings (a bad ROCE_TEST_BACKEND, hw without
//   ROCE_TEST_HW_DEVICES), or null: the run fails with that line, it never skips;
// - the Catch2 tag of the tests to leave out ("[vroce]" under hw), or null.
extern "C" const char* roce_test_backend_error();
extern "C" const char* roce_test_excluded_tag();
