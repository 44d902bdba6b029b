// The async-event thread over vroce: port events injected through vroce's test hook
// (vroce_inject_port_event, VROCE_PRIVATE_1.0) reach the thread and are logged once each with
// device, port and event name; DEVICE_FATAL marks the device, a link flap marks nothing.
#include <dlfcn.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "core/device/async_events.h"
#include "core/device/device_discovery.h"
#include "hang_bound.h"
#include "test_addresses.h"
#include "util/log.h"
#include "vroce_process.h"

using roce::test::test_address;
using roce::test::vroce_device_list;

using namespace roce;
using namespace std::chrono_literals;

namespace {

std::mutex log_mutex;
std::vector<std::string> log_lines;

__attribute__((format(printf, 5, 6))) void capture(ncclDebugLogLevel, unsigned long, const char*,
                                                   int, const char* format, ...) {
  char line[1024];
  va_list args;
  va_start(args, format);
  std::vsnprintf(line, sizeof(line), format, args);
  va_end(args);
  std::lock_guard lock(log_mutex);
  log_lines.emplace_back(line);
}

size_t lines_with(const std::string& a, const std::string& b) {
  std::lock_guard lock(log_mutex);
  size_t count = 0;
  for (const auto& line : log_lines) {
    if (line.find(a) != std::string::npos && line.find(b) != std::string::npos) {
      ++count;
    }
  }
  return count;
}

using InjectFn = int (*)(const char*, int);

InjectFn inject_hook() {
  void* handle = dlopen(VROCE_LIBRARY_PATH, RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(handle != nullptr);
  void* symbol = dlvsym(handle, "vroce_inject_port_event", "VROCE_PRIVATE_1.0");
  REQUIRE(symbol != nullptr);
  InjectFn fn = nullptr;
  std::memcpy(&fn, &symbol, sizeof(fn));
  return fn;
}

}  // namespace

TEST_CASE("port and device events injected into vroce reach the async-event thread",
          "[async][vroce]") {
  test::set_env("NCCL_DEBUG", "INFO");
  test::set_env("NCCL_DEBUG_SUBSYS", "ALL");
  log::set_nccl_logger(&capture);
  const auto lib = test::load_vroce(vroce_device_list({"pv0"}));
  const DiscoveryResult found =
      test::value_of(discover_devices(lib, DiscoveryOptions::from_config(test::config_from_env())));
  REQUIRE(found.devices.size() == 1);
  AsyncEventMonitor monitor(found.devices[0].context);
  const InjectFn inject = inject_hook();

  REQUIRE(inject("pv0", IBV_EVENT_PORT_ERR) == 1);  // one open context: the monitor's
  REQUIRE(monitor.wait_for_events(1, roce::test::kHangBound));
  CHECK_FALSE(monitor.device_fatal());
  CHECK(found.devices[0].context->query_port(1).attr.state == IBV_PORT_DOWN);
  CHECK(lines_with("dev pv0 port 1", "IBV_EVENT_PORT_ERR") == 1);

  // A port that went down is not offered by a new discovery, and the summary says why.
  const DiscoveryResult while_down =
      test::value_of(discover_devices(lib, DiscoveryOptions::from_config(test::config_from_env())));
  CHECK(while_down.devices.empty());
  CHECK(while_down.skipped_summary().find("pv0 port 1: state DOWN") != std::string::npos);

  REQUIRE(inject("pv0", IBV_EVENT_PORT_ACTIVE) >= 1);
  REQUIRE(monitor.wait_for_events(2, roce::test::kHangBound));
  CHECK_FALSE(monitor.device_fatal());
  CHECK(lines_with("dev pv0 port 1", "IBV_EVENT_PORT_ACTIVE") == 1);
  CHECK(lines_with("dev pv0 port 1", "the link is up again") == 1);
  // Up again: a new discovery offers the port.
  CHECK(
      test::value_of(discover_devices(lib, DiscoveryOptions::from_config(test::config_from_env())))
          .devices.size() == 1);

  REQUIRE(inject("pv0", IBV_EVENT_DEVICE_FATAL) >= 1);
  REQUIRE(monitor.wait_for_events(3, roce::test::kHangBound));
  CHECK(monitor.device_fatal());
  CHECK(lines_with("dev pv0 device", "IBV_EVENT_DEVICE_FATAL") == 1);

  // stop() wakes the thread out of its wait on the event fd; a stop that hung would be a hang
  // (ctest's timeout), which is all there is to check here: not how long it took.
  monitor.stop();
  log::set_nccl_logger(nullptr);
}
