// Connection setup entry points of core/api.h: listen, connect, accept, closeListen.
//
// NCCL gives connect() the same handle buffer on every retry until the comm is returned, so an
// attempt in progress is found again by the handle's address (and its content, in case the
// buffer was reused for another handle). Attempts are removed when they finish either way.
#include <cstring>
#include <map>
#include <mutex>
#include <optional>

#include "core/api.h"
#include "core/connect/handshake_checks.h"
#include "core/connect/listen_address.h"
#include "core/connect/listen_comm.h"
#include "core/connect/send_connector.h"
#include "core/device/hca_filter.h"
#include "core/plugin.h"
#include "net/listen_handle.h"
#include "util/config.h"
#include "util/log.h"

namespace roce::api {
namespace {

struct Attempt {
  std::array<uint8_t, net::kListenHandleSize> handle{};
  int dev = -1;
  std::unique_ptr<SendConnector> connector;
};

std::mutex g_attempts_mutex;
std::map<const void*, Attempt> g_attempts;

std::shared_ptr<DeviceRuntime> device_or_warn(const char* entry, int dev) {
  auto device = Plugin::instance().device(dev);
  if (device == nullptr) {
    ROCE_WARN(NCCL_NET, "{}: device {} does not exist ({} devices{})", entry, dev,
              Plugin::instance().device_count(),
              Plugin::instance().initialized() ? "" : "; init has not succeeded");
  }
  return device;
}

// The devices a comm on plugin device `dev` runs on: the port, or the virtual NIC's members;
// empty (after a WARN) when one is gone.
std::optional<CommDevices> comm_devices(const char* entry, int dev) {
  CommDevices devices;
  devices.id = dev;
  for (const int member : Plugin::instance().members_of(dev)) {
    auto device = device_or_warn(entry, member);
    if (device == nullptr) {
      return std::nullopt;
    }
    devices.members.push_back(std::move(device));
  }
  if (devices.members.empty()) {
    device_or_warn(entry, dev);
    return std::nullopt;
  }
  return devices;
}

// The GID's address, or (not an address of this namespace) NCCL_SOCKET_IFNAME's / the default
// route's, as net_ib does.
Result<ListenAddressChoice> listen_address_for(const DeviceRuntime& device) {
  ListenAddressInputs in;
  in.gid_address = bind_address_for_gid(device.info().gid.entry.gid);
  in.gid_address_is_local = address_is_local(in.gid_address);
  std::optional<HcaFilter> ifname;
  if (!in.gid_address_is_local) {
    const std::string& text = config().socket_ifname;
    if (!text.empty()) {
      Result<HcaFilter> parsed = parse_hca_filter(text);
      if (!parsed) {
        return failure("NCCL_SOCKET_IFNAME=" + text + ": " + parsed.error());
      }
      ifname = std::move(*parsed);
      in.socket_ifname = &*ifname;
      in.socket_ifname_text = text;
    }
    in.interfaces = namespace_interface_addresses();
    in.default_interface = default_route_interface();
  }
  return choose_listen_address(in);
}

}  // namespace

ncclResult_t listen(int dev, int traffic_class, void* handle, void** listen_comm) {
  std::optional<CommDevices> devices = comm_devices("listen", dev);
  if (!devices) {
    return ncclInvalidArgument;
  }
  const std::shared_ptr<DeviceRuntime> device = devices->members.front();
  auto offer = local_class_offer(traffic_class);
  if (!offer) {
    ROCE_WARN(NCCL_NET, "listen on {}: {}", device->name(), offer.error());
    return ncclInvalidUsage;
  }
  const auto bind = listen_address_for(*device);
  if (!bind) {
    ROCE_WARN(NCCL_NET, "listen on {}: {}", device->name(), bind.error());
    return ncclSystemError;
  }
  const net::SocketAddress address =
      net::SocketAddress::from_bytes(bind->address.family, bind->address.bytes, 0);
  auto listener = net::Listener::open(address);
  if (!listener) {
    ROCE_WARN(NCCL_NET, "listen on {}: {}", device->name(), listener.error());
    return ncclSystemError;
  }
  auto nonce = net::random_nonce();
  if (!nonce) {
    ROCE_WARN(NCCL_NET, "listen on {}: {}", device->name(), nonce.error());
    return ncclSystemError;
  }
  net::ListenHandle out;
  out.address = listener->address();
  out.nonce = *nonce;
  std::memset(handle, 0, NCCL_NET_HANDLE_MAXSIZE);
  net::encode_listen_handle(
      out, std::span<uint8_t>(static_cast<uint8_t*>(handle), NCCL_NET_HANDLE_MAXSIZE));
  auto* comm = new ListenComm(std::move(*devices), std::move(*listener), *nonce, *offer);
  ROCE_INFO(NCCL_NET, "listening on {} at {} ({})", device->name(), comm->address().to_string(),
            bind->why);
  *listen_comm = static_cast<Comm*>(comm);
  return ncclSuccess;
}

ncclResult_t connect(int dev, int traffic_class, void* handle, void** send_comm) {
  std::array<uint8_t, net::kListenHandleSize> bytes{};
  std::memcpy(bytes.data(), handle, bytes.size());

  std::unique_lock lock(g_attempts_mutex);
  auto it = g_attempts.find(handle);
  if (it != g_attempts.end() && (it->second.handle != bytes || it->second.dev != dev)) {
    g_attempts.erase(it);  // the buffer now holds another handle: a new attempt
    it = g_attempts.end();
  }
  if (it == g_attempts.end()) {
    std::optional<CommDevices> devices = comm_devices("connect", dev);
    if (!devices) {
      return ncclInvalidArgument;
    }
    const std::shared_ptr<DeviceRuntime>& device = devices->members.front();
    auto decoded = net::decode_listen_handle(bytes);
    if (!decoded) {
      ROCE_WARN(NCCL_NET, "connect on {}: the handle is not a RoCE listen handle: {}",
                device->name(), decoded.error());
      return ncclInvalidArgument;
    }
    ncclResult_t result = ncclSuccess;
    auto connector = SendConnector::start(*devices, traffic_class, *decoded, &result);
    if (connector == nullptr) {
      return result;
    }
    it = g_attempts.emplace(handle, Attempt{bytes, dev, std::move(connector)}).first;
  }
  // Each attempt is driven by the thread that calls connect with its handle; the lock only
  // protects the map, so release it while the step runs.
  SendConnector* connector = it->second.connector.get();
  lock.unlock();
  Comm* comm = nullptr;
  ncclResult_t result = connector->step(&comm);
  if (result != ncclSuccess || comm != nullptr) {
    lock.lock();
    g_attempts.erase(handle);
  }
  if (comm != nullptr) {
    *send_comm = comm;
  }
  return result;
}

ncclResult_t accept(void* listen_comm, void** recv_comm) {
  Comm* comm = Comm::from_handle(listen_comm, CommKind::Listen);
  if (comm == nullptr) {
    ROCE_WARN(NCCL_NET, "accept: {} is not a live RoCE listen comm", listen_comm);
    return ncclInvalidArgument;
  }
  Comm* accepted = nullptr;
  ncclResult_t result = static_cast<ListenComm*>(comm)->accept(&accepted);
  if (accepted != nullptr) {
    *recv_comm = accepted;
  }
  return result;
}

void abandon_connect_attempts() noexcept {
  std::map<const void*, Attempt> abandoned;
  {
    const std::lock_guard lock(g_attempts_mutex);
    abandoned.swap(g_attempts);
  }
  if (!abandoned.empty()) {
    ROCE_INFO(NCCL_NET, "{} connect attempt(s) never completed; their resources are released",
              abandoned.size());
  }
}

ncclResult_t close_listen(void* listen_comm) {
  Comm* comm = Comm::from_handle(listen_comm, CommKind::Listen);
  if (comm == nullptr) {
    ROCE_WARN(NCCL_NET, "closeListen: {} is not a live RoCE listen comm", listen_comm);
    return ncclInvalidArgument;
  }
  delete comm;
  return ncclSuccess;
}

}  // namespace roce::api
