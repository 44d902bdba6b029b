// Loads the built libibverbs.so.1 the way NCCL does (dlopen, then dlvsym of every entry point at
// the version NCCL asks for) and uses what it bound, in a program that links no verbs library.
// Usage: vroce_dlopen_abi_check <path to libibverbs.so.1>; exit 0 when every check passes.
//
// The PD/MR/CQ/QP entry points belong to the RC engine (another part of vroce): either all of
// them are present or none is (a build without the data path); a partial set fails.
#include <arpa/inet.h>
#include <dlfcn.h>
#include <infiniband/verbs.h>
#include <limits.h>
#include <link.h>
#include <poll.h>
#include <stdlib.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "hang_bound.h"

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "FAIL: %s\n", what.c_str());
    ++failures;
  }
}

struct Wanted {
  const char* name;
  const char* version;
};

// src/misc/ibvsymbols.cc of NCCL: the symbols it requires at IBVERBS_1.1.
constexpr Wanted kNcclRequiredPlatform[] = {
    {"ibv_get_device_list", "IBVERBS_1.1"}, {"ibv_free_device_list", "IBVERBS_1.1"},
    {"ibv_get_device_name", "IBVERBS_1.1"}, {"ibv_open_device", "IBVERBS_1.1"},
    {"ibv_close_device", "IBVERBS_1.1"},    {"ibv_get_async_event", "IBVERBS_1.1"},
    {"ibv_ack_async_event", "IBVERBS_1.1"}, {"ibv_query_device", "IBVERBS_1.1"},
    {"ibv_query_port", "IBVERBS_1.1"},      {"ibv_query_gid", "IBVERBS_1.1"},
    {"ibv_fork_init", "IBVERBS_1.1"},       {"ibv_event_type_str", "IBVERBS_1.1"},
};
constexpr Wanted kNcclRequiredDataPath[] = {
    {"ibv_query_qp", "IBVERBS_1.1"},   {"ibv_alloc_pd", "IBVERBS_1.1"},
    {"ibv_dealloc_pd", "IBVERBS_1.1"}, {"ibv_reg_mr", "IBVERBS_1.1"},
    {"ibv_dereg_mr", "IBVERBS_1.1"},   {"ibv_create_cq", "IBVERBS_1.1"},
    {"ibv_destroy_cq", "IBVERBS_1.1"}, {"ibv_create_qp", "IBVERBS_1.1"},
    {"ibv_modify_qp", "IBVERBS_1.1"},  {"ibv_destroy_qp", "IBVERBS_1.1"},
};
// Optional in NCCL (it runs without them), all from the RC engine.
constexpr Wanted kNcclOptionalDataPath[] = {
    {"ibv_reg_mr_iova2", "IBVERBS_1.8"},
    {"ibv_reg_dmabuf_mr", "IBVERBS_1.12"},
    {"ibv_query_ece", "IBVERBS_1.10"},
    {"ibv_set_ece", "IBVERBS_1.10"},
};
// Other device-level entry points at their rdma-core 44 versions.
constexpr Wanted kPlatformOthers[] = {
    {"ibv_get_device_guid", "IBVERBS_1.1"},       {"ibv_get_device_index", "IBVERBS_1.9"},
    {"_ibv_query_gid_ex", "IBVERBS_1.11"},        {"_ibv_query_gid_table", "IBVERBS_1.11"},
    {"ibv_query_gid_type", "IBVERBS_PRIVATE_34"}, {"ibv_get_pkey_index", "IBVERBS_1.5"},
    {"ibv_is_fork_initialized", "IBVERBS_1.13"},  {"ibv_rate_to_mult", "IBVERBS_1.0"},
    {"ibv_read_sysfs_file", "IBVERBS_1.0"},       {"vroce_inject_port_event", "VROCE_PRIVATE_1.0"},
};

void* bind_symbol(void* library, const Wanted& wanted) {
  return dlvsym(library, wanted.name, wanted.version);
}

// Exactly one libibverbs is mapped, and it is the one under test (not Debian's).
void check_only_this_library(const char* path) {
  char expected[PATH_MAX];
  if (realpath(path, expected) == nullptr) {
    check(false, std::string("realpath of ") + path);
    return;
  }
  struct Seen {
    std::vector<std::string> paths;
  } seen;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        if (info->dlpi_name != nullptr && std::strstr(info->dlpi_name, "libibverbs") != nullptr) {
          char resolved[PATH_MAX];
          const char* name =
              realpath(info->dlpi_name, resolved) != nullptr ? resolved : info->dlpi_name;
          static_cast<Seen*>(data)->paths.emplace_back(name);
        }
        return 0;
      },
      &seen);
  check(seen.paths.size() == 1, "exactly one libibverbs mapped");
  for (const std::string& mapped : seen.paths) {
    check(mapped == expected, "mapped libibverbs is " + mapped + ", expected " + expected);
  }
}

void use_device_level_entry_points(void* library) {
  using GetDeviceList = ibv_device** (*)(int*);
  using FreeDeviceList = void (*)(ibv_device**);
  using GetDeviceName = const char* (*)(ibv_device*);
  using OpenDevice = ibv_context* (*)(ibv_device*);
  using CloseDevice = int (*)(ibv_context*);
  using QueryDevice = int (*)(ibv_context*, ibv_device_attr*);
  using QueryPort = int (*)(ibv_context*, uint8_t, ibv_port_attr*);  // as NCCL declares it
  using QueryGid = int (*)(ibv_context*, uint8_t, int, ibv_gid*);
  using GetAsyncEvent = int (*)(ibv_context*, ibv_async_event*);
  using AckAsyncEvent = void (*)(ibv_async_event*);
  using EventTypeStr = const char* (*)(ibv_event_type);
  using ForkInit = int (*)();
  using Inject = int (*)(const char*, int);

  auto get_device_list =
      reinterpret_cast<GetDeviceList>(bind_symbol(library, kNcclRequiredPlatform[0]));
  auto free_device_list =
      reinterpret_cast<FreeDeviceList>(bind_symbol(library, kNcclRequiredPlatform[1]));
  auto get_device_name =
      reinterpret_cast<GetDeviceName>(bind_symbol(library, kNcclRequiredPlatform[2]));
  auto open_device = reinterpret_cast<OpenDevice>(bind_symbol(library, kNcclRequiredPlatform[3]));
  auto close_device = reinterpret_cast<CloseDevice>(bind_symbol(library, kNcclRequiredPlatform[4]));
  auto get_async_event =
      reinterpret_cast<GetAsyncEvent>(bind_symbol(library, kNcclRequiredPlatform[5]));
  auto ack_async_event =
      reinterpret_cast<AckAsyncEvent>(bind_symbol(library, kNcclRequiredPlatform[6]));
  auto query_device = reinterpret_cast<QueryDevice>(bind_symbol(library, kNcclRequiredPlatform[7]));
  auto query_port = reinterpret_cast<QueryPort>(bind_symbol(library, kNcclRequiredPlatform[8]));
  auto query_gid = reinterpret_cast<QueryGid>(bind_symbol(library, kNcclRequiredPlatform[9]));
  auto fork_init = reinterpret_cast<ForkInit>(bind_symbol(library, kNcclRequiredPlatform[10]));
  auto event_type_str =
      reinterpret_cast<EventTypeStr>(bind_symbol(library, kNcclRequiredPlatform[11]));
  auto inject = reinterpret_cast<Inject>(bind_symbol(library, kPlatformOthers[9]));
  if (failures != 0) {
    return;
  }

  check(fork_init() == 0, "ibv_fork_init");
  int count = 0;
  ibv_device** list = get_device_list(&count);
  check(list != nullptr && count == 2, "two devices from VROCE_DEVICES");
  if (list == nullptr || count < 1) {
    return;
  }
  check(std::strcmp(get_device_name(list[0]), "vpdl0") == 0, "first device is vpdl0");
  ibv_context* ctx = open_device(list[0]);
  check(ctx != nullptr, "ibv_open_device");
  if (ctx == nullptr) {
    free_device_list(list);
    return;
  }

  ibv_device_attr attr{};
  check(query_device(ctx, &attr) == 0 && attr.vendor_id == 0x025652 && attr.phys_port_cnt == 1,
        "ibv_query_device");

  // NCCL passes a full struct to the compat symbol; bytes 48..51 must stay the caller's.
  ibv_port_attr port;
  std::memset(&port, 0xa5, sizeof(port));
  check(query_port(ctx, 1, &port) == 0, "ibv_query_port@IBVERBS_1.1");
  check(port.state == IBV_PORT_ACTIVE && port.link_layer == IBV_LINK_LAYER_ETHERNET &&
            (port.flags & IBV_QPF_GRH_REQUIRED) != 0,
        "compat port attributes");
  const auto* raw = reinterpret_cast<const unsigned char*>(&port);
  check(raw[48] == 0xa5 && raw[49] == 0xa5 && raw[50] == 0xa5 && raw[51] == 0xa5,
        "bytes 48..51 untouched by the compat ibv_query_port");

  // The extended op, which the header-inline ibv_query_port prefers, fills all 52 bytes.
  verbs_context* vctx = verbs_get_ctx_op(ctx, query_port);
  check(vctx != nullptr, "verbs_get_ctx_op(ctx, query_port)");
  if (vctx != nullptr) {
    std::memset(&port, 0xa5, sizeof(port));
    check(vctx->query_port(ctx, 1, &port, sizeof(port)) == 0 && port.port_cap_flags2 == 0,
          "extended query_port writes port_cap_flags2");
  }
  check(verbs_get_ctx_op(ctx, query_device_ex) != nullptr, "query_device_ex op");

  ibv_gid gid{};
  check(query_gid(ctx, 1, 3, &gid) == 0, "ibv_query_gid");
  // The first device's address, from VROCE_DEVICES ("vpdl0=<address>,...").
  const std::string devices =
      std::getenv("VROCE_DEVICES") != nullptr ? std::getenv("VROCE_DEVICES") : "";
  const std::string first = devices.substr(0, devices.find(','));
  const std::string address = first.substr(first.find('=') + 1);
  unsigned char mapped[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  check(inet_pton(AF_INET, address.c_str(), mapped + 12) == 1,
        "VROCE_DEVICES names vpdl0's IPv4 address");
  check(std::memcmp(gid.raw, mapped, 16) == 0, "GID 3 is ::ffff:" + address);

  // Never block forever in a test: wait for readiness with a timeout before each read.
  auto event_ready = [ctx] {
    pollfd p{ctx->async_fd, POLLIN, 0};
    return poll(&p, 1, roce::test::kHangBoundMs) == 1;
  };
  check(inject("vpdl0", IBV_EVENT_PORT_ERR) == 1, "vroce_inject_port_event");
  ibv_async_event event{};
  if (!event_ready()) {
    check(false, "the async fd becomes readable after a port event");
    close_device(ctx);
    free_device_list(list);
    return;
  }
  check(get_async_event(ctx, &event) == 0 && event.event_type == IBV_EVENT_PORT_ERR &&
            event.element.port_num == 1,
        "ibv_get_async_event delivers the port error");
  check(std::strlen(event_type_str(event.event_type)) > 0, "ibv_event_type_str");
  ack_async_event(&event);
  inject("vpdl0", IBV_EVENT_PORT_ACTIVE);
  check(event_ready() && get_async_event(ctx, &event) == 0 &&
            event.event_type == IBV_EVENT_PORT_ACTIVE,
        "port active again");
  ack_async_event(&event);

  check(close_device(ctx) == 0, "ibv_close_device");
  free_device_list(list);
}

}  // namespace

int main(int argc, char* argv[]) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <path to libibverbs.so.1>\n", argv[0]);
    return 2;
  }
  void* library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    std::fprintf(stderr, "FAIL: dlopen(%s): %s\n", argv[1], dlerror());
    return 1;
  }
  check_only_this_library(argv[1]);

  for (const Wanted& wanted : kNcclRequiredPlatform) {
    check(bind_symbol(library, wanted) != nullptr,
          std::string("dlvsym ") + wanted.name + "@" + wanted.version);
  }
  for (const Wanted& wanted : kPlatformOthers) {
    check(bind_symbol(library, wanted) != nullptr,
          std::string("dlvsym ") + wanted.name + "@" + wanted.version);
  }
  // NCCL also probes symbols newer than rdma-core 44; they must be absent, not a crash.
  check(dlvsym(library, "ibv_query_port_speed", "IBVERBS_1.16") == nullptr,
        "ibv_query_port_speed@IBVERBS_1.16 absent");
  // dlsym without a version binds the default version: the same function.
  check(dlsym(library, "ibv_query_port") == dlvsym(library, "ibv_query_port", "IBVERBS_1.1"),
        "default version of ibv_query_port is IBVERBS_1.1");

  size_t present = 0;
  size_t total = 0;
  std::string missing;
  auto count_group = [&](const auto& group) {
    for (const Wanted& wanted : group) {
      ++total;
      if (bind_symbol(library, wanted) != nullptr) {
        ++present;
      } else {
        missing += std::string(" ") + wanted.name + "@" + wanted.version;
      }
    }
  };
  count_group(kNcclRequiredDataPath);
  count_group(kNcclOptionalDataPath);
  if (present == 0) {
    std::printf("note: the RC data path is not linked into this build (%zu entry points)\n", total);
  } else {
    check(present == total, "the data path's entry points are all present; missing:" + missing);
  }

  use_device_level_entry_points(library);
  if (failures == 0) {
    std::printf("PASS: %s binds like NCCL binds libibverbs\n", argv[1]);
  }
  return failures == 0 ? 0 : 1;
}
