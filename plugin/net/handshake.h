// The connection-setup messages exchanged over the bootstrap socket, their little-endian wire
// format and their validation. The exchange:
//   sender -> receiver  ConnectRequest  (its QPs, GID, MTU, class, clear-to-send ring)
//   receiver -> sender  ConnectReply    (its QPs, GID, MTU, class as it will apply it, sizes area)
//   sender -> receiver  Ready           (the sender's QPs are RTS)
//   either side         Reject          (reason code and text, so the peer can log why)
//
// Every message: a 12-byte header (magic u32, protocol version u16, kind u16, body length u32)
// and a body whose fields are listed per struct below, in order. decode_message() is one pure
// function from bytes to a validated message or a specific reason (a fuzz target drives it);
// encode_message() applies the same validation before writing, so a message this plugin sends
// is always one it would accept.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "roce/result.h"

namespace roce::net {

inline constexpr uint32_t kHandshakeMagic = 0x53484352;  // "RCHS"
// 2: ConnectRequest.split_data; 3: ECE at the end of the request and the reply, and the listen
// nonce at the end of a Reject; 4: the members of a virtual NIC (issue 48): each endpoint's
// member count and, per member after the first, its GID, GID index and MTU; the reply's sizes
// area rkey per member after the first.
inline constexpr uint16_t kHandshakeVersion = 4;
inline constexpr size_t kHandshakeHeaderSize = 12;

inline constexpr size_t kMaxQpsPerConnection = 128;  // NCCL_IB_QPS_PER_CONNECTION's range
inline constexpr uint32_t kMaxQpn = 0xffffff;        // QPNs and PSNs are 24-bit on the wire (BTH)
inline constexpr uint32_t kMaxPsn = 0xffffff;
inline constexpr size_t kMaxDeviceNameLength = 64;
inline constexpr size_t kMaxRejectTextLength = 512;
inline constexpr uint16_t kMaxTrafficClass = 255;
inline constexpr uint8_t kMaxServiceLevel = 15;
inline constexpr uint32_t kMaxRingSlots = 65536;     // slot counts are powers of two up to this
inline constexpr uint32_t kMaxRingSlotSize = 65536;  // bytes, a multiple of 8
inline constexpr uint64_t kMaxRingBytes = 64ULL << 20;
inline constexpr uint32_t kMaxRecvsLimit = 8;  // ncclNet maxRecvs we can group
inline constexpr uint8_t kMaxMembers = 8;      // ncclNet v12's NCCL_NET_MAX_DEVS_PER_NIC

enum class MessageKind : uint16_t { ConnectRequest = 1, ConnectReply = 2, Ready = 3, Reject = 4 };

// Why a message was refused, by this side's decoder or (sent in a Reject) by the peer.
enum class RejectReason : uint16_t {
  None = 0,
  BadMagic = 1,
  UnsupportedVersion = 2,
  UnknownKind = 3,
  LengthMismatch = 4,
  Truncated = 5,
  BadQpCount = 6,
  BadQpn = 7,
  BadPsn = 8,
  BadMtu = 9,
  ZeroGid = 10,
  BadTrafficClass = 11,
  BadServiceLevel = 12,
  WrongNonce = 13,
  BadSlots = 14,
  BadDeviceName = 15,
  BadAddress = 16,
  BadMaxRecvs = 17,
  BadRejectText = 18,
  BadSplitMode = 19,
  BadEce = 20,
  BadMembers = 21,
  // Sent in a Reject by a peer whose decoder accepted the message but who cannot go on.
  TrafficClassMismatch = 100,
  QpCountMismatch = 101,
  MtuMismatch = 102,
  ResourceFailure = 103,
  ShuttingDown = 104,
  Internal = 105,
  MemberCountMismatch = 106,
};

const char* reject_reason_name(RejectReason reason);
// Name for a raw code from a peer (unknown codes from newer peers print as "reason <n>").
std::string reject_reason_name(uint16_t code);

struct QpInfo {
  uint32_t qpn = 0;  // 1..kMaxQpn
  uint32_t psn = 0;  // 0..kMaxPsn: the starting PSN
  bool operator==(const QpInfo&) const = default;
};

// A remotely writable ring: the sender's clear-to-send ring, or the receiver's sizes area.
struct RemoteRing {
  uint64_t address = 0;  // non-zero
  uint32_t rkey = 0;
  uint32_t slot_count = 0;  // power of two, 1..kMaxRingSlots
  uint32_t slot_size = 0;   // bytes, multiple of 8, 8..kMaxRingSlotSize
  bool operator==(const RemoteRing&) const = default;
};

// Enhanced Connection Establishment (ibv_ece), as NCCL's IB transport negotiates it: the sender
// sends its QP's ECE, the receiver sets it on its QPs and replies with what the device reduced it
// to, which the sender then sets on its own. Wire: supported u8 (0 or 1), vendor id u32, options
// u32, comp_mask u32; all zero when not supported (NCCL_IB_ECE_ENABLE=0, or no ibv_query_ece).
struct Ece {
  uint8_t supported = 0;
  uint32_t vendor_id = 0;
  uint32_t options = 0;
  uint32_t comp_mask = 0;
  bool operator==(const Ece&) const = default;
};

// A member of a virtual NIC after the first (the first is EndpointInfo's own GID and MTU). Wire:
// GID [16], GID index u8, MTU u8.
struct MemberInfo {
  std::array<uint8_t, 16> gid{};
  uint8_t gid_index = 0;
  uint8_t mtu = 0;
  bool operator==(const MemberInfo&) const = default;
};

// Fields shared by the request and the reply, in wire order: plugin version u32, device name
// (length u8 + printable ASCII), GID [16], GID index u8, port MTU u8 (an ibv_mtu: 1=256 ..
// 5=4096), traffic class u16, service level u8, QP count u8, then per QP qpn u32 and psn u32,
// then the member count u8 (1 for a port, up to kMaxMembers for a virtual NIC) and a MemberInfo
// per member after the first. The QPs are the members' in blocks: QP q is on member
// q / (QP count / member count), so the QP count is a multiple of the member count.
struct EndpointInfo {
  uint32_t plugin_version = 0;  // (major << 16) | (minor << 8) | patch
  std::string device_name;
  std::array<uint8_t, 16> gid{};
  uint8_t gid_index = 0;
  uint8_t mtu = 0;
  uint16_t traffic_class = 0;
  uint8_t service_level = 0;
  std::vector<QpInfo> qps;
  uint8_t member_count = 1;
  std::vector<MemberInfo> more_members;  // member_count - 1 entries
  bool operator==(const EndpointInfo&) const = default;
};

// Body: nonce u64, EndpointInfo, then the clear-to-send ring (address u64, rkey u32, slot count
// u32, slot size u32), max_recvs u32, split_data u8 and the sender's Ece.
struct ConnectRequest {
  uint64_t nonce = 0;  // the listen handle's nonce
  EndpointInfo endpoint;
  RemoteRing cts_ring;
  uint32_t max_recvs = 0;  // 1..kMaxRecvsLimit
  // The sender's NCCL_IB_SPLIT_DATA_ON_QPS, which the receiver adopts (both sides must post on
  // the same QPs): 0 each message on one QP chosen by its sequence number, 1 split over all.
  uint8_t split_data = 0;
  Ece ece;  // the sender QP's ECE (ibv_query_ece)
  bool operator==(const ConnectRequest&) const = default;
};

// Body: nonce u64 (echoed), EndpointInfo, then the sizes area (address u64, rkey u32, slot count
// u32, slot size u32), the receiver's Ece, and the count u8 and rkeys u32 of the sizes area's
// registrations on the members after the first (one per member: the sender writes the sizes of a
// multi-receive through the member that carries it).
struct ConnectReply {
  uint64_t nonce = 0;
  EndpointInfo endpoint;
  RemoteRing sizes_area;
  Ece ece;  // what the receiver's device reduced the sender's ECE to; unsupported: all zero
  std::vector<uint32_t> more_sizes_rkeys;  // endpoint.member_count - 1 entries
  bool operator==(const ConnectReply&) const = default;
};

// Body: nonce u64.
struct Ready {
  uint64_t nonce = 0;
  bool operator==(const Ready&) const = default;
};

// Body: reason u16, text length u16, text (printable ASCII, at most kMaxRejectTextLength), nonce
// u64.
struct Reject {
  uint16_t reason = 0;  // a RejectReason value; unknown values from newer peers are kept
  std::string text;
  // The listen handle's nonce when the sender of the Reject knows it (a refusing sender, or a
  // receiver answering a request that carried it), so the peer may act on it; 0 otherwise. A
  // receiver never echoes its nonce to a peer that did not show it.
  uint64_t nonce = 0;
  bool operator==(const Reject&) const = default;
};

using HandshakeMessage = std::variant<ConnectRequest, ConnectReply, Ready, Reject>;

MessageKind kind_of(const HandshakeMessage& message);
const char* message_kind_name(MessageKind kind);

struct DecodeExpectations {
  // When set, a request, reply or ready carrying another nonce is refused (WrongNonce).
  std::optional<uint64_t> nonce;
};

struct DecodeResult {
  std::optional<HandshakeMessage> message;  // set exactly when reason == None
  RejectReason reason = RejectReason::None;
  std::string detail;  // one line naming the offending field and value
  bool ok() const { return reason == RejectReason::None; }
};

DecodeResult decode_message(std::span<const uint8_t> bytes, const DecodeExpectations& expect = {});

// The same checks decode_message() applies to a decoded body. *detail names the field.
RejectReason validate_message(const HandshakeMessage& message, const DecodeExpectations& expect,
                              std::string* detail);

// Fails (naming the field) when the message would not pass validate_message().
Result<std::vector<uint8_t>> encode_message(const HandshakeMessage& message);

// Bytes of an ibv_mtu code (1..5), 0 for anything else.
constexpr int mtu_bytes(uint8_t mtu) {
  return mtu >= 1 && mtu <= 5 ? 128 << mtu : 0;
}

// This build's version in EndpointInfo::plugin_version form, and as text.
uint32_t plugin_version_code();
std::string plugin_version_text(uint32_t code);

}  // namespace roce::net
