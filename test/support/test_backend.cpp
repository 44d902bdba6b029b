// The fabric suites' backend switch: see test_backend.h.
#include "test_backend.h"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "test_addresses.h"

namespace roce::test {
namespace {

std::mutex g_mutex;
std::map<std::string, std::string> g_names;  // role -> the operator's device (hw)

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "" : value;
}

std::vector<std::string> hw_devices() {
  std::vector<std::string> devices;
  std::istringstream list(env_or_empty("ROCE_TEST_HW_DEVICES"));
  for (std::string name; std::getline(list, name, ',');) {
    if (!name.empty()) {
      devices.push_back(name);
    }
  }
  return devices;
}

const char* const kHwHelp =
    "ROCE_TEST_BACKEND=hw runs the fabric tests on this host's RDMA NICs: set "
    "ROCE_TEST_HW_DEVICES to two verbs devices (or ports) that reach each other, for example "
    "ROCE_TEST_HW_DEVICES=mlx5_0,mlx5_1 (see README.md, \"Running the fabric suite on real "
    "NICs\"); or unset ROCE_TEST_BACKEND to run on vroce";

}  // namespace

TestBackend test_backend() {
  const std::string value = env_or_empty("ROCE_TEST_BACKEND");
  if (value.empty() || value == "vroce") {
    return TestBackend::Vroce;
  }
  if (value == "hw") {
    return TestBackend::Hw;
  }
  throw std::runtime_error("ROCE_TEST_BACKEND=" + value +
                           ": expected vroce (the default) or hw (this host's RDMA NICs)");
}

void use_test_devices(std::initializer_list<std::string_view> roles) {
  if (test_backend() == TestBackend::Vroce) {
    setenv("VROCE_DEVICES", vroce_device_list(roles).c_str(), 1);
    return;
  }
  const std::vector<std::string> devices = hw_devices();
  if (devices.size() < roles.size()) {
    throw std::runtime_error("this test needs " + std::to_string(roles.size()) +
                             " devices and ROCE_TEST_HW_DEVICES names " +
                             std::to_string(devices.size()) + ": " + kHwHelp);
  }
  std::string hca = "=";  // NCCL_IB_HCA's exact-match form: mlx5_1 must not also pick mlx5_10
  std::lock_guard<std::mutex> lock(g_mutex);
  size_t i = 0;
  for (const auto role : roles) {
    g_names[std::string(role)] = devices[i];
    hca += (i == 0 ? "" : ",") + devices[i];
    ++i;
  }
  setenv("NCCL_IB_HCA", hca.c_str(), 1);
}

std::string test_device_name(const std::string& role) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const auto it = g_names.find(role);
  return it == g_names.end() ? role : it->second;
}

void prepare_test_backend(const char* vroce_library) {
  TestBackend backend = TestBackend::Vroce;
  try {
    backend = test_backend();
  } catch (const std::exception&) {
    return;  // roce_test_backend_error() reports it before any test runs
  }
  if (backend == TestBackend::Vroce) {
    setenv("NCCL_IBVERBS_LIB", vroce_library, 0);
    return;
  }
  const std::string lib = env_or_empty("ROCE_TEST_HW_IBVERBS_LIB");
  setenv("NCCL_IBVERBS_LIB", lib.empty() ? "libibverbs.so.1" : lib.c_str(), 0);
}

}  // namespace roce::test

extern "C" const char* roce_test_backend_error() {
  static std::string error;
  try {
    if (roce::test::test_backend() == roce::test::TestBackend::Vroce ||
        !roce::test::hw_devices().empty()) {
      return nullptr;
    }
    error = std::string("ROCE_TEST_HW_DEVICES is not set. ") + roce::test::kHwHelp;
  } catch (const std::exception& e) {
    error = e.what();
  }
  return error.c_str();
}

extern "C" const char* roce_test_excluded_tag() {
  try {
    return roce::test::test_backend() == roce::test::TestBackend::Hw ? "[vroce]" : nullptr;
  } catch (const std::exception&) {
    return nullptr;  // prepare_test_backend() has already reported it
  }
}
