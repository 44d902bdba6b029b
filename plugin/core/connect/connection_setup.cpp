// Shared connection-setup helpers: see connection_setup.h.
#include "core/connect/connection_setup.h"

#include <fmt/format.h>

#include "core/device/async_events.h"
#include "core/device/device_runtime.h"
#include "core/device/gid_selection.h"
#include "core/device/traffic_class.h"
#include "util/config.h"
#include "util/log.h"
#include "verbs/queue_pair.h"

namespace roce {

ConnectionSettings ConnectionSettings::from_config() {
  const Config& cfg = config();
  ConnectionSettings s;
  s.qps_per_connection = cfg.qps_per_connection;
  s.timeout = static_cast<uint8_t>(cfg.ib_timeout);
  s.retry_count = static_cast<uint8_t>(cfg.retry_count);
  s.pkey_index = static_cast<uint16_t>(cfg.pkey_index);
  s.handshake_timeout = std::chrono::milliseconds(cfg.connect_timeout_ms);
  s.flush = !cfg.gdr_flush_disable;
  s.use_inline = cfg.use_inline;
  s.split_data = cfg.split_data_on_qps;
  s.fifo_traffic_class = cfg.fifo_traffic_class;
  s.ece_enable = cfg.ece_enable;
  s.adaptive_routing = cfg.adaptive_routing;
  s.ar_threshold = static_cast<uint32_t>(cfg.ar_threshold);
  s.peer_watch = cfg.peer_watch;
  s.peer_keepalive_s = cfg.peer_keepalive_s;
  s.failover = cfg.failover;
  s.recovery_timeout_s = cfg.recovery_timeout_s;
  return s;
}

Result<ClassOffer> local_class_offer(int comm_traffic_class) {
  const Config& cfg = config();
  auto choice = resolve_traffic_class(cfg, comm_traffic_class);
  if (!choice) {
    return failure(choice.error());
  }
  ClassOffer offer;
  offer.traffic_class = choice->traffic_class;
  offer.configured = choice->source != TrafficClassSource::Default;
  offer.service_level = choice->service_level;
  offer.sl_configured = cfg.service_level.has_value();
  offer.source = traffic_class_source_name(choice->source);
  return offer;
}

net::EndpointInfo local_endpoint(const std::vector<std::shared_ptr<DeviceRuntime>>& members,
                                 int traffic_class, int service_level,
                                 const std::vector<std::unique_ptr<verbs::QueuePair>>& qps,
                                 const std::vector<uint32_t>& psns) {
  const DeviceRuntime& device = *members.front();
  net::EndpointInfo info;
  info.plugin_version = net::plugin_version_code();
  info.device_name = device.name();
  info.gid = device.info().gid.entry.gid;
  info.gid_index = static_cast<uint8_t>(device.gid_index());
  info.mtu = static_cast<uint8_t>(device.info().active_mtu);
  info.traffic_class = static_cast<uint16_t>(traffic_class);
  info.service_level = static_cast<uint8_t>(service_level);
  for (size_t i = 0; i < qps.size(); ++i) {
    info.qps.push_back(net::QpInfo{qps[i]->qp_num(), psns[i]});
  }
  info.member_count = static_cast<uint8_t>(members.size());
  for (size_t m = 1; m < members.size(); ++m) {
    const DeviceRuntime& member = *members[m];
    info.more_members.push_back(net::MemberInfo{member.info().gid.entry.gid,
                                                static_cast<uint8_t>(member.gid_index()),
                                                static_cast<uint8_t>(member.info().active_mtu)});
  }
  return info;
}

std::string devices_name(const std::vector<std::shared_ptr<DeviceRuntime>>& members) {
  std::string name;
  for (const auto& member : members) {
    name += (name.empty() ? "" : "+") + member->name();
  }
  return name;
}

std::string describe_peer(const net::SocketAddress& address, const net::EndpointInfo* endpoint) {
  if (endpoint == nullptr) {
    return address.to_string();
  }
  return fmt::format("{} (dev {}, gid {})", address.to_string(), endpoint->device_name,
                     gid_to_string(endpoint->gid));
}

net::Reject make_reject(net::RejectReason reason, const std::string& text, uint64_t nonce) {
  net::Reject reject;
  reject.reason = static_cast<uint16_t>(reason);
  reject.nonce = nonce;
  // Only printable ASCII travels; the peer logs it.
  for (char c : text.substr(0, net::kMaxRejectTextLength)) {
    reject.text.push_back(c >= 0x20 && c < 0x7f ? c : '?');
  }
  return reject;
}

Status queue_message(net::FramedChannel& channel, const net::HandshakeMessage& message) {
  auto bytes = net::encode_message(message);
  if (!bytes) {
    return failure(bytes.error());
  }
  if (!channel.queue(*bytes)) {
    return failure(channel.error().message);
  }
  return {};
}

void send_reject_best_effort(net::FramedChannel& channel, net::RejectReason reason,
                             const std::string& text, uint64_t nonce) {
  if (queue_message(channel, make_reject(reason, text, nonce))) {
    (void)channel.flush();
  }
}

Status queue_watch_hello(net::FramedChannel& channel, uint64_t nonce) {
  const auto frame = net::encode_watch_frame(net::WatchSignal::Hello, nonce);
  // The channel adds the frame's length itself.
  if (!channel.queue(std::span<const uint8_t>(frame).subspan(net::FramedChannel::kHeaderSize))) {
    return failure("cannot queue the peer watch's hello: " + channel.error().message);
  }
  return {};
}

std::unique_ptr<net::PeerWatch> watch_peer(net::FramedChannel& channel, uint64_t nonce,
                                           const ConnectionSettings& settings,
                                           const DeviceRuntime& device,
                                           const std::string& peer_text) {
  if (!settings.peer_watch) {
    return nullptr;
  }
  // The nudge holds its own reference to the monitor: the watcher may call it while the comm
  // and its device are being released.
  auto state = std::make_shared<net::PeerState>([monitor = device.monitor()] {
    if (monitor != nullptr) {
      monitor->nudge_checks();
    }
  });
  auto watch = net::PeerWatch::start(channel.release_socket(), nonce, settings.peer_keepalive_s,
                                     std::move(state), peer_text);
  if (!watch) {
    ROCE_WARN(NCCL_NET,
              "connection on {} with {}: the peer watch cannot start ({}); this comm learns of "
              "its peer's death from the data path only (RETRY_EXC, or never on a receive-only "
              "comm)",
              device.name(), peer_text, watch.error());
    return nullptr;
  }
  return std::move(*watch);
}

}  // namespace roce
