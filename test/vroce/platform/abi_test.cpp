// The device-level verbs entry points, called in-process as a linked program calls them:
// enumeration, open/close, the device/port/GID/P_Key queries with rdma-core's return
// conventions, the header inlines that go through the extended context, async events and the
// port-event hook, and the helper functions. The devices are vpt0 and vpt1 on the
// process's first two test addresses (test_environment.cpp).
#include <arpa/inet.h>
#include <endian.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <future>
#include <string>

#include "abi/private_decls.h"
#include "abi/test_hooks.h"
#include "device/device.h"
#include "hang_bound.h"
#include "sysfs/fake_sysfs.h"
#include "test_addresses.h"

using roce::test::test_address;
using roce::test::vroce_device_list;

using namespace std::chrono_literals;

namespace {

// An open context on one of this suite's devices, closed at scope exit.
class OpenDevice {
 public:
  explicit OpenDevice(const char* name) {
    int count = 0;
    list_ = ibv_get_device_list(&count);
    REQUIRE(list_ != nullptr);
    for (int i = 0; i < count; ++i) {
      if (std::strcmp(ibv_get_device_name(list_[i]), name) == 0) {
        device_ = list_[i];
      }
    }
    REQUIRE(device_ != nullptr);
    context_ = ibv_open_device(device_);
    REQUIRE(context_ != nullptr);
  }
  ~OpenDevice() {
    if (context_ != nullptr) {
      ibv_close_device(context_);
    }
    ibv_free_device_list(list_);
  }
  OpenDevice(const OpenDevice&) = delete;
  OpenDevice& operator=(const OpenDevice&) = delete;

  ibv_device* device() const { return device_; }
  ibv_context* context() const { return context_; }

 private:
  ibv_device** list_ = nullptr;
  ibv_device* device_ = nullptr;
  ibv_context* context_ = nullptr;
};

ibv_gid mapped_v4(const char* text) {
  ibv_gid gid{};
  gid.raw[10] = 0xff;
  gid.raw[11] = 0xff;
  REQUIRE(inet_pton(AF_INET, text, gid.raw + 12) == 1);
  return gid;
}

bool same(const ibv_gid& a, const ibv_gid& b) {
  return std::memcmp(a.raw, b.raw, 16) == 0;
}

// A value of the enum's range that names no enumerator (what a newer library or a corrupt caller
// might pass). Going through a parameter keeps it a run-time value.
template <typename Enum>
Enum unnamed(int value) {
  return static_cast<Enum>(value);
}

bool readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, 0) == 1;
}

}  // namespace

TEST_CASE("device list: the configured devices, in order, NULL-terminated", "[abi]") {
  int count = -1;
  ibv_device** list = ibv_get_device_list(&count);
  REQUIRE(list != nullptr);
  REQUIRE(count == 2);
  CHECK(list[2] == nullptr);
  CHECK(std::string(ibv_get_device_name(list[0])) == "vpt0");
  CHECK(std::string(ibv_get_device_name(list[1])) == "vpt1");
  CHECK(ibv_get_device_index(list[0]) == 0);
  CHECK(ibv_get_device_index(list[1]) == 1);
  CHECK(list[0]->node_type == IBV_NODE_CA);
  CHECK(list[0]->transport_type == IBV_TRANSPORT_IB);
  CHECK(std::string(list[0]->ibdev_path) == "/sys/class/infiniband/vpt0");
  CHECK(std::string(list[1]->dev_name) == "uverbs1");
  CHECK(std::string(list[1]->dev_path) == "/sys/class/infiniband_verbs/uverbs1");
  // The GUID is the EUI-64 of the device's (derived) MAC: ff:fe in the middle.
  __be64 guid = ibv_get_device_guid(list[0]);
  const auto* bytes = reinterpret_cast<const uint8_t*>(&guid);
  CHECK(bytes[3] == 0xff);
  CHECK(bytes[4] == 0xfe);
  CHECK(guid != ibv_get_device_guid(list[1]));
  ibv_free_device_list(list);

  ibv_device** again = ibv_get_device_list(nullptr);  // num_devices is optional
  CHECK(again != nullptr);
  ibv_free_device_list(again);
}

TEST_CASE("device getters reject pointers vroce did not hand out", "[abi]") {
  ibv_device foreign{};
  errno = 0;
  CHECK(ibv_get_device_guid(&foreign) == 0);
  CHECK(errno == EINVAL);
  CHECK(ibv_get_device_index(&foreign) == -1);
  CHECK(ibv_open_device(&foreign) == nullptr);
  CHECK(errno == EINVAL);
  CHECK(ibv_open_device(nullptr) == nullptr);
  CHECK(ibv_get_device_name(nullptr) == nullptr);
}

TEST_CASE("an open context is an extended verbs_context with device-level ops", "[abi]") {
  OpenDevice dev("vpt0");
  ibv_context* ctx = dev.context();
  CHECK(ctx->device == dev.device());
  CHECK(ctx->abi_compat == __VERBS_ABI_IS_EXTENDED);
  verbs_context* vctx = verbs_get_ctx(ctx);
  REQUIRE(vctx != nullptr);
  CHECK(vctx->sz == sizeof(verbs_context));
  CHECK(verbs_get_ctx_op(ctx, query_port) != nullptr);
  CHECK(verbs_get_ctx_op(ctx, query_device_ex) != nullptr);
  // Extended features vroce lacks stay NULL, so their inlines report EOPNOTSUPP/ENOSYS.
  CHECK(verbs_get_ctx_op(ctx, open_xrcd) == nullptr);
  CHECK(verbs_get_ctx_op(ctx, alloc_dm) == nullptr);
  CHECK(ctx->num_comp_vectors == 1);
  CHECK(fcntl(ctx->cmd_fd, F_GETFD) >= 0);
  CHECK(fcntl(ctx->async_fd, F_GETFD) >= 0);
  CHECK(ctx->async_fd != ctx->cmd_fd);
  CHECK(ctx->ops._compat_query_port != nullptr);
  CHECK(ctx->ops._compat_query_device != nullptr);
}

TEST_CASE("close releases the context's descriptors", "[abi]") {
  int count = 0;
  ibv_device** list = ibv_get_device_list(&count);
  REQUIRE(count > 0);
  ibv_context* ctx = ibv_open_device(list[0]);
  REQUIRE(ctx != nullptr);
  int async_fd = ctx->async_fd;
  int cmd_fd = ctx->cmd_fd;
  CHECK(ibv_close_device(ctx) == 0);
  CHECK(fcntl(async_fd, F_GETFD) == -1);
  CHECK(fcntl(cmd_fd, F_GETFD) == -1);
  CHECK(ibv_close_device(nullptr) == -1);
  ibv_free_device_list(list);
}

TEST_CASE("ibv_query_device and the ibv_query_device_ex inline", "[abi]") {
  OpenDevice dev("vpt1");
  ibv_device_attr attr{};
  REQUIRE(ibv_query_device(dev.context(), &attr) == 0);
  CHECK(attr.vendor_id == 0x025652);
  CHECK(attr.vendor_part_id == 4791);
  CHECK(attr.phys_port_cnt == 1);
  CHECK(attr.max_qp_init_rd_atom == 16);
  CHECK(attr.atomic_cap == IBV_ATOMIC_NONE);
  CHECK(attr.node_guid == ibv_get_device_guid(dev.device()));
  CHECK(ibv_query_device(dev.context(), nullptr) == EINVAL);

  ibv_device_attr_ex ex;
  std::memset(&ex, 0xab, sizeof(ex));
  REQUIRE(ibv_query_device_ex(dev.context(), nullptr, &ex) == 0);
  CHECK(std::memcmp(&ex.orig_attr, &attr, sizeof(attr)) == 0);
  CHECK(ex.phys_port_cnt_ex == 1);
  CHECK(ex.odp_caps.general_caps == 0);
  CHECK(ex.completion_timestamp_mask == 0);
  ibv_query_device_ex_input input{};
  input.comp_mask = 1;
  CHECK(ibv_query_device_ex(dev.context(), &input, &ex) == EINVAL);
}

TEST_CASE("port attributes through the inline: all 52 bytes", "[abi]") {
  OpenDevice dev("vpt0");
  ibv_port_attr attr;
  std::memset(&attr, 0xab, sizeof(attr));
  REQUIRE(ibv_query_port(dev.context(), 1, &attr) == 0);
  CHECK(attr.state == IBV_PORT_ACTIVE);
  CHECK(attr.phys_state == 5);
  CHECK(attr.link_layer == IBV_LINK_LAYER_ETHERNET);
  CHECK(attr.active_mtu == IBV_MTU_4096);  // lo's MTU is 65536
  CHECK(attr.max_mtu == IBV_MTU_4096);
  CHECK((attr.flags & IBV_QPF_GRH_REQUIRED) != 0);
  CHECK(attr.gid_tbl_len == 16);
  CHECK(attr.pkey_tbl_len == 1);
  CHECK(attr.lid == 0);
  CHECK(attr.active_width == 2);     // 4X
  CHECK(attr.active_speed == 128);   // NDR: 400 Gb/s by default
  CHECK(attr.port_cap_flags2 == 0);  // written by the extended op
  CHECK(ibv_query_port(dev.context(), 2, &attr) == EINVAL);
  CHECK(ibv_query_port(dev.context(), 0, &attr) == EINVAL);
}

TEST_CASE("the exported ibv_query_port writes only the 48-byte compat layout", "[abi]") {
  OpenDevice dev("vpt0");
  // NCCL binds this symbol with dlvsym and passes a full ibv_port_attr: bytes 48..51 are the
  // caller's and must survive, exactly as with rdma-core.
  unsigned char buffer[sizeof(ibv_port_attr)];
  std::memset(buffer, 0xa5, sizeof(buffer));
  REQUIRE((ibv_query_port)(dev.context(), 1, reinterpret_cast<_compat_ibv_port_attr*>(buffer)) ==
          0);
  for (size_t i = 48; i < sizeof(buffer); ++i) {
    INFO("byte " << i);
    CHECK(buffer[i] == 0xa5);
  }
  ibv_port_attr full{};
  REQUIRE(ibv_query_port(dev.context(), 1, &full) == 0);
  CHECK(std::memcmp(buffer, &full, 48) == 0);
  CHECK((ibv_query_port)(dev.context(), 3, reinterpret_cast<_compat_ibv_port_attr*>(buffer)) ==
        EINVAL);
  // The ops table's compat slot behaves the same.
  std::memset(buffer, 0x5a, sizeof(buffer));
  REQUIRE(dev.context()->ops._compat_query_port(
              dev.context(), 1, reinterpret_cast<_compat_ibv_port_attr*>(buffer)) == 0);
  CHECK(buffer[48] == 0x5a);
  CHECK(std::memcmp(buffer, &full, 48) == 0);
}

TEST_CASE("the extended query_port op honours the caller's struct size", "[abi]") {
  OpenDevice dev("vpt0");
  verbs_context* vctx = verbs_get_ctx_op(dev.context(), query_port);
  REQUIRE(vctx != nullptr);
  unsigned char buffer[64];
  std::memset(buffer, 0xee, sizeof(buffer));
  // A newer rdma-core's struct is longer: the tail vroce does not know is zeroed.
  REQUIRE(vctx->query_port(dev.context(), 1, reinterpret_cast<ibv_port_attr*>(buffer), 56) == 0);
  for (size_t i = sizeof(ibv_port_attr); i < 56; ++i) {
    CHECK(buffer[i] == 0);
  }
  CHECK(buffer[56] == 0xee);
  CHECK(vctx->query_port(dev.context(), 1, reinterpret_cast<ibv_port_attr*>(buffer), 40) == EINVAL);
}

TEST_CASE("GID table through ibv_query_gid, _ex, _table and ibv_query_gid_type", "[abi]") {
  OpenDevice dev("vpt1");
  ibv_context* ctx = dev.context();
  int lo = static_cast<int>(if_nametoindex("lo"));

  ibv_gid gid{};
  REQUIRE(ibv_query_gid(ctx, 1, 3, &gid) == 0);
  CHECK(same(gid, mapped_v4(test_address(1).c_str())));
  std::memset(&gid, 0x11, sizeof(gid));
  REQUIRE(ibv_query_gid(ctx, 1, 0, &gid) == 0);  // the default GID, fe80::<EUI-64>
  CHECK(gid.raw[0] == 0xfe);
  CHECK(gid.raw[1] == 0x80);
  CHECK(gid.global.interface_id == ibv_get_device_guid(ctx->device));
  ibv_gid v2_link_local{};
  REQUIRE(ibv_query_gid(ctx, 1, 1, &v2_link_local) == 0);
  CHECK(same(gid, v2_link_local));
  std::memset(&gid, 0x11, sizeof(gid));
  REQUIRE(ibv_query_gid(ctx, 1, 4, &gid) == 0);  // empty: zero GID, success
  CHECK(same(gid, ibv_gid{}));
  errno = 0;
  CHECK(ibv_query_gid(ctx, 1, 16, &gid) == -1);
  CHECK(errno == EINVAL);
  CHECK(ibv_query_gid(ctx, 2, 0, &gid) == -1);
  CHECK(ibv_query_gid(ctx, 1, -1, &gid) == -1);

  const ibv_gid_type kTypes[] = {IBV_GID_TYPE_ROCE_V1, IBV_GID_TYPE_ROCE_V2, IBV_GID_TYPE_ROCE_V1,
                                 IBV_GID_TYPE_ROCE_V2};
  for (uint32_t i = 0; i < 4; ++i) {  // link-local v1/v2, then the address's v1/v2
    INFO("index " << i);
    ibv_gid_entry entry{};
    REQUIRE(ibv_query_gid_ex(ctx, 1, i, &entry, 0) == 0);
    CHECK(entry.gid_index == i);
    CHECK(entry.port_num == 1);
    CHECK(entry.gid_type == kTypes[i]);
    CHECK(entry.ndev_ifindex == static_cast<uint32_t>(lo));
    ibv_gid_type_sysfs sysfs_type{};
    REQUIRE(ibv_query_gid_type(ctx, 1, i, &sysfs_type) == 0);
    CHECK(sysfs_type == (kTypes[i] == IBV_GID_TYPE_ROCE_V2 ? IBV_GID_TYPE_SYSFS_ROCE_V2
                                                           : IBV_GID_TYPE_SYSFS_IB_ROCE_V1));
  }
  ibv_gid_entry entry{};
  CHECK(ibv_query_gid_ex(ctx, 1, 4, &entry, 0) == ENODATA);
  CHECK(ibv_query_gid_ex(ctx, 1, 16, &entry, 0) == EINVAL);
  CHECK(ibv_query_gid_ex(ctx, 2, 0, &entry, 0) == EINVAL);
  CHECK(ibv_query_gid_ex(ctx, 1, 0, &entry, 1) == EINVAL);
  CHECK(_ibv_query_gid_ex(ctx, 1, 0, &entry, 0, sizeof(entry) - 4) == EINVAL);
  ibv_gid_type_sysfs sysfs_type{};
  CHECK(ibv_query_gid_type(ctx, 1, 7, &sysfs_type) == 0);  // empty: v1, as rdma-core says
  CHECK(sysfs_type == IBV_GID_TYPE_SYSFS_IB_ROCE_V1);
  CHECK(ibv_query_gid_type(ctx, 1, 999, &sysfs_type) == -1);

  ibv_gid_entry table[8];
  REQUIRE(ibv_query_gid_table(ctx, table, 8, 0) == 4);
  for (uint32_t i = 0; i < 4; ++i) {
    CHECK(table[i].gid_index == i);
  }
  CHECK(same(table[3].gid, mapped_v4(test_address(1).c_str())));
  CHECK(table[3].gid_type == IBV_GID_TYPE_ROCE_V2);
  CHECK(ibv_query_gid_table(ctx, table, 3, 0) == -EINVAL);  // too small for 4 entries
  CHECK(ibv_query_gid_table(ctx, table, 8, 1) == -EINVAL);
}

TEST_CASE("P_Key table: one full-membership default partition", "[abi]") {
  OpenDevice dev("vpt0");
  __be16 pkey = 0;
  REQUIRE(ibv_query_pkey(dev.context(), 1, 0, &pkey) == 0);
  CHECK(be16toh(pkey) == 0xffff);
  CHECK(ibv_query_pkey(dev.context(), 1, 1, &pkey) == -1);
  CHECK(ibv_query_pkey(dev.context(), 2, 0, &pkey) == -1);
  CHECK(ibv_get_pkey_index(dev.context(), 1, htobe16(0xffff)) == 0);
  errno = 0;
  CHECK(ibv_get_pkey_index(dev.context(), 1, htobe16(0x8001)) == -1);
  CHECK(errno == ENOENT);
}

TEST_CASE("injected port events reach every open context and move the port state", "[abi]") {
  OpenDevice first("vpt0");
  OpenDevice second("vpt0");
  OpenDevice other("vpt1");

  CHECK(vroce_inject_port_event("vpt0", IBV_EVENT_PORT_ERR) == 2);
  for (ibv_context* ctx : {first.context(), second.context()}) {
    CHECK(readable(ctx->async_fd));
    ibv_async_event event{};
    REQUIRE(ibv_get_async_event(ctx, &event) == 0);
    CHECK(event.event_type == IBV_EVENT_PORT_ERR);
    CHECK(event.element.port_num == 1);
    ibv_ack_async_event(&event);
    ibv_port_attr attr{};
    REQUIRE(ibv_query_port(ctx, 1, &attr) == 0);
    CHECK(attr.state == IBV_PORT_DOWN);
    CHECK(attr.phys_state == 3);
  }
  CHECK_FALSE(readable(other.context()->async_fd));  // other devices are not told

  // A blocked reader (NCCL's async thread) wakes when the port comes back.
  auto waiter = std::async(std::launch::async, [&] {
    ibv_async_event event{};
    int rc = ibv_get_async_event(first.context(), &event);
    if (rc == 0) {
      ibv_ack_async_event(&event);
    }
    return rc == 0 ? event.event_type : IBV_EVENT_WQ_FATAL;
  });
  std::this_thread::sleep_for(20ms);
  CHECK(vroce_inject_port_event("vpt0", IBV_EVENT_PORT_ACTIVE) == 2);
  REQUIRE(waiter.wait_for(roce::test::kHangBound) == std::future_status::ready);
  CHECK(waiter.get() == IBV_EVENT_PORT_ACTIVE);
  ibv_port_attr attr{};
  REQUIRE(ibv_query_port(first.context(), 1, &attr) == 0);
  CHECK(attr.state == IBV_PORT_ACTIVE);
  ibv_async_event drained{};
  REQUIRE(ibv_get_async_event(second.context(), &drained) == 0);

  errno = 0;
  CHECK(vroce_inject_port_event("vp-none", IBV_EVENT_PORT_ERR) == -1);
  CHECK(errno == ENODEV);
  CHECK(vroce_inject_port_event("vpt0", IBV_EVENT_QP_FATAL) == -1);
  CHECK(errno == EINVAL);
  CHECK(vroce_inject_port_event("vpt0", 1000) == -1);
  CHECK(ibv_get_async_event(nullptr, &drained) == -1);
}

TEST_CASE("a non-blocking async fd makes ibv_get_async_event fail with EAGAIN", "[abi]") {
  OpenDevice dev("vpt1");
  int flags = fcntl(dev.context()->async_fd, F_GETFL);
  REQUIRE(fcntl(dev.context()->async_fd, F_SETFL, flags | O_NONBLOCK) == 0);
  ibv_async_event event{};
  errno = 0;
  CHECK(ibv_get_async_event(dev.context(), &event) == -1);
  CHECK(errno == EAGAIN);
  REQUIRE(vroce_inject_port_event("vpt1", IBV_EVENT_GID_CHANGE) == 1);
  CHECK(ibv_get_async_event(dev.context(), &event) == 0);
  CHECK(event.event_type == IBV_EVENT_GID_CHANGE);
  ibv_ack_async_event(&event);
}

TEST_CASE("string helpers name every value and reject unknown ones", "[abi]") {
  CHECK(std::string(ibv_node_type_str(IBV_NODE_CA)) == "InfiniBand channel adapter");
  CHECK(std::string(ibv_node_type_str(IBV_NODE_RNIC)) == "iWARP NIC");
  CHECK(std::string(ibv_node_type_str(IBV_NODE_UNKNOWN)) == "unknown");
  CHECK(std::string(ibv_node_type_str(unnamed<ibv_node_type>(-5))) == "unknown");
  CHECK(std::string(ibv_port_state_str(IBV_PORT_ACTIVE)) == "PORT_ACTIVE");
  CHECK(std::string(ibv_port_state_str(IBV_PORT_DOWN)) == "PORT_DOWN");
  CHECK(std::string(ibv_port_state_str(unnamed<ibv_port_state>(7))) == "invalid state");
  CHECK(std::string(ibv_event_type_str(IBV_EVENT_PORT_ERR)) == "port error");
  CHECK(std::string(ibv_event_type_str(IBV_EVENT_QP_ACCESS_ERR)) ==
        "local access violation work queue error");
  CHECK(std::string(ibv_event_type_str(IBV_EVENT_WQ_FATAL)) == "WQ fatal");
  CHECK(std::string(ibv_event_type_str(unnamed<ibv_event_type>(25))) == "unknown");
  CHECK(std::string(ibv_wc_status_str(IBV_WC_SUCCESS)) == "success");
  CHECK(std::string(ibv_wc_status_str(IBV_WC_RETRY_EXC_ERR)) == "transport retry counter exceeded");
  CHECK(std::string(ibv_wc_status_str(IBV_WC_RNR_RETRY_EXC_ERR)) == "RNR retry counter exceeded");
  CHECK(std::string(ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR)) == "remote access error");
  CHECK(std::string(ibv_wc_status_str(IBV_WC_LOC_LEN_ERR)) == "local length error");
  CHECK(std::string(ibv_wc_status_str(IBV_WC_WR_FLUSH_ERR)) == "work request flushed error");
  CHECK(std::string(ibv_wc_status_str(IBV_WC_TM_RNDV_INCOMPLETE)) ==
        "tag matching rendezvous incomplete");
  CHECK(std::string(ibv_wc_status_str(unnamed<ibv_wc_status>(30))) == "unknown");
  // Every status and event in rdma-core 44 has its own text.
  for (int s = IBV_WC_SUCCESS; s <= IBV_WC_TM_RNDV_INCOMPLETE; ++s) {
    CHECK(std::string(ibv_wc_status_str(static_cast<ibv_wc_status>(s))) != "unknown");
  }
  for (int e = IBV_EVENT_CQ_ERR; e <= IBV_EVENT_WQ_FATAL; ++e) {
    CHECK(std::string(ibv_event_type_str(static_cast<ibv_event_type>(e))) != "unknown");
  }
}

TEST_CASE("rate helpers convert both ways and reject what has no value", "[abi]") {
  CHECK(ibv_rate_to_mult(IBV_RATE_2_5_GBPS) == 1);
  CHECK(ibv_rate_to_mult(IBV_RATE_40_GBPS) == 16);
  CHECK(ibv_rate_to_mult(IBV_RATE_400_GBPS) == 160);
  CHECK(ibv_rate_to_mult(IBV_RATE_25_GBPS) == -1);  // a 64b/66b rate: no SDR multiple
  CHECK(ibv_rate_to_mult(IBV_RATE_MAX) == -1);
  CHECK(mult_to_ibv_rate(4) == IBV_RATE_10_GBPS);
  CHECK(mult_to_ibv_rate(320) == IBV_RATE_800_GBPS);
  CHECK(mult_to_ibv_rate(3) == IBV_RATE_MAX);
  CHECK(ibv_rate_to_mbps(IBV_RATE_100_GBPS) == 103125);
  CHECK(ibv_rate_to_mbps(IBV_RATE_400_GBPS) == 425000);
  CHECK(ibv_rate_to_mbps(IBV_RATE_MAX) == -1);
  CHECK(mbps_to_ibv_rate(25781) == IBV_RATE_25_GBPS);
  CHECK(mbps_to_ibv_rate(12345) == IBV_RATE_MAX);
  for (int r = IBV_RATE_2_5_GBPS; r <= IBV_RATE_1200_GBPS; ++r) {
    auto rate = static_cast<ibv_rate>(r);  // 2..24 are all ibv_rate values
    INFO("rate " << r);
    CHECK(mbps_to_ibv_rate(ibv_rate_to_mbps(rate)) == rate);
    int mult = ibv_rate_to_mult(rate);
    if (mult > 0) {
      CHECK(mult_to_ibv_rate(mult) == rate);
    }
  }
}

TEST_CASE("ibv_read_sysfs_file: content without its newline, NUL-terminated", "[abi]") {
  char dir[] = "/tmp/vp-sysfs-read-XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  std::string path = std::string(dir) + "/attr";
  FILE* file = std::fopen(path.c_str(), "w");
  REQUIRE(file != nullptr);
  std::fputs("RoCE v2\n", file);
  std::fclose(file);

  char buf[16];
  CHECK(ibv_read_sysfs_file(dir, "attr", buf, sizeof(buf)) == 7);
  CHECK(std::string(buf) == "RoCE v2");
  char exact[8];  // "RoCE v2\n" fits exactly: the newline becomes the terminator
  CHECK(ibv_read_sysfs_file(dir, "attr", exact, sizeof(exact)) == 7);
  char small[4];
  errno = 0;
  CHECK(ibv_read_sysfs_file(dir, "attr", small, sizeof(small)) == -1);
  CHECK(ibv_read_sysfs_file(dir, "missing", buf, sizeof(buf)) == -1);
  CHECK(errno == ENOENT);
  // An unused GID slot of the fake tree reads like the kernel's: EINVAL.
  CHECK(ibv_read_sysfs_file("/sys/class/net/lo", "speed", buf, sizeof(buf)) == -1);
  CHECK(errno == EINVAL);
  unlink(path.c_str());
  rmdir(dir);

  CHECK(std::string(ibv_get_sysfs_path()) == "/sys");
}

TEST_CASE("fork needs no preparation on vroce", "[abi]") {
  CHECK(ibv_fork_init() == 0);
  CHECK(ibv_is_fork_initialized() == IBV_FORK_UNNEEDED);
  char page[64];
  CHECK(ibv_dontfork_range(page, sizeof(page)) == 0);
  CHECK(ibv_dofork_range(page, sizeof(page)) == 0);
}

TEST_CASE("entry points without meaning on vroce fail with errno set", "[abi]") {
  OpenDevice dev("vpt0");
  errno = 0;
  CHECK(ibv_import_device(dev.context()->cmd_fd) == nullptr);
  CHECK(errno == EOPNOTSUPP);
  errno = 0;
  CHECK(ibv_import_dm(dev.context(), 1) == nullptr);
  CHECK(errno == EOPNOTSUPP);
  errno = 0;
  ibv_ah_attr ah{};
  uint8_t mac[6];
  uint16_t vid = 0;
  CHECK(ibv_resolve_eth_l2_from_gid(dev.context(), &ah, mac, &vid) != 0);
  CHECK(errno == EOPNOTSUPP);
  errno = 0;
  vroce_register_driver_1_1("mlx5", nullptr);
  CHECK(errno == ENOSYS);
}

TEST_CASE("kernel ABI marshalling helpers copy every field", "[abi]") {
  ib_uverbs_qp_attr kern{};
  kern.qp_state = IBV_QPS_RTS;
  kern.path_mtu = IBV_MTU_1024;
  kern.dest_qp_num = 0x123456;
  kern.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
  kern.max_inline_data = 64;
  kern.ah_attr.grh.dgid[15] = 9;
  kern.ah_attr.grh.traffic_class = 106;
  kern.ah_attr.is_global = 1;
  kern.alt_ah_attr.port_num = 1;
  kern.timeout = 14;
  kern.rnr_retry = 7;
  ibv_qp_attr attr{};
  ibv_copy_qp_attr_from_kern(&attr, &kern);
  CHECK(attr.qp_state == IBV_QPS_RTS);
  CHECK(attr.path_mtu == IBV_MTU_1024);
  CHECK(attr.dest_qp_num == 0x123456);
  CHECK(attr.qp_access_flags == IBV_ACCESS_REMOTE_WRITE);
  CHECK(attr.cap.max_inline_data == 64);
  CHECK(attr.ah_attr.grh.dgid.raw[15] == 9);
  CHECK(attr.ah_attr.grh.traffic_class == 106);
  CHECK(attr.ah_attr.is_global == 1);
  CHECK(attr.alt_ah_attr.port_num == 1);
  CHECK(attr.timeout == 14);
  CHECK(attr.rnr_retry == 7);

  ibv_sa_path_rec path{};
  path.dgid.raw[0] = 0xfe;
  path.pkey = htobe16(0xffff);
  path.mtu = IBV_MTU_4096;
  path.traffic_class = 106;
  path.reversible = 1;
  ib_user_path_rec user{};
  ibv_copy_path_rec_to_kern(&user, &path);
  CHECK(user.dgid[0] == 0xfe);
  CHECK(user.mtu == IBV_MTU_4096);
  ibv_sa_path_rec back{};
  ibv_copy_path_rec_from_kern(&back, &user);
  CHECK(back.dgid.raw[0] == 0xfe);
  CHECK(back.pkey == htobe16(0xffff));
  CHECK(back.mtu == IBV_MTU_4096);
  CHECK(back.traffic_class == 106);
  CHECK(back.reversible == 1);
}
