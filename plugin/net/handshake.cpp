// Handshake message encoding, decoding and validation (see net/handshake.h).
#include "net/handshake.h"

#include <array>
#include <charconv>
#include <cstdio>
#include <string_view>

#include "net/wire.h"

#ifndef ROCE_VERSION
#error "ROCE_VERSION must be defined by the build (plugin/CMakeLists.txt)"
#endif

namespace roce::net {
namespace {

std::string hex(uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof(text), "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

bool printable(std::string_view text) {
  for (const char c : text) {
    if (c < 0x20 || c > 0x7e) {
      return false;
    }
  }
  return true;
}

// Device names are shown in logs as-is, so control bytes and non-ASCII are refused outright.
std::string escaped(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c >= 0x20 && c <= 0x7e) {
      out += c;
    } else {
      char code[8];
      std::snprintf(code, sizeof(code), "\\x%02x", static_cast<unsigned char>(c));
      out += code;
    }
  }
  return out;
}

bool is_zero(const std::array<uint8_t, 16>& gid) {
  for (const uint8_t b : gid) {
    if (b != 0) {
      return false;
    }
  }
  return true;
}

RejectReason check_nonce(uint64_t nonce, const DecodeExpectations& expect, std::string* detail) {
  if (expect.nonce && nonce != *expect.nonce) {
    *detail = "nonce " + hex(nonce) + " does not match " + hex(*expect.nonce) +
              ": a stale handle, or a connection meant for another listener";
    return RejectReason::WrongNonce;
  }
  return RejectReason::None;
}

RejectReason check_endpoint(const EndpointInfo& endpoint, std::string* detail) {
  if (endpoint.device_name.empty() || endpoint.device_name.size() > kMaxDeviceNameLength ||
      !printable(endpoint.device_name)) {
    *detail = "device name '" + escaped(endpoint.device_name) + "' must be 1.." +
              std::to_string(kMaxDeviceNameLength) + " printable ASCII characters";
    return RejectReason::BadDeviceName;
  }
  if (is_zero(endpoint.gid)) {
    *detail = "GID (index " + std::to_string(endpoint.gid_index) +
              ") is all zero: the peer has no usable source GID";
    return RejectReason::ZeroGid;
  }
  if (mtu_bytes(endpoint.mtu) == 0) {
    *detail = "MTU code " + std::to_string(endpoint.mtu) +
              " is not an ibv_mtu (1=256, 2=512, 3=1024, 4=2048, 5=4096)";
    return RejectReason::BadMtu;
  }
  if (endpoint.traffic_class > kMaxTrafficClass) {
    *detail = "traffic class " + std::to_string(endpoint.traffic_class) + " is outside 0..255";
    return RejectReason::BadTrafficClass;
  }
  if (endpoint.service_level > kMaxServiceLevel) {
    *detail = "service level " + std::to_string(endpoint.service_level) + " is outside 0..15";
    return RejectReason::BadServiceLevel;
  }
  if (endpoint.qps.empty() || endpoint.qps.size() > kMaxQpsPerConnection) {
    *detail = "QP count " + std::to_string(endpoint.qps.size()) + " is outside 1.." +
              std::to_string(kMaxQpsPerConnection);
    return RejectReason::BadQpCount;
  }
  if (endpoint.member_count < 1 || endpoint.member_count > kMaxMembers ||
      endpoint.more_members.size() + 1 != endpoint.member_count ||
      endpoint.qps.size() % endpoint.member_count != 0) {
    *detail = "member count " + std::to_string(endpoint.member_count) + " with " +
              std::to_string(endpoint.more_members.size()) + " further members and " +
              std::to_string(endpoint.qps.size()) + " QPs: a NIC has 1.." +
              std::to_string(kMaxMembers) + " members and the same number of QPs on each";
    return RejectReason::BadMembers;
  }
  for (size_t i = 0; i < endpoint.more_members.size(); ++i) {
    const MemberInfo& member = endpoint.more_members[i];
    if (is_zero(member.gid)) {
      *detail = "member " + std::to_string(i + 1) + "'s GID (index " +
                std::to_string(member.gid_index) + ") is all zero";
      return RejectReason::ZeroGid;
    }
    if (mtu_bytes(member.mtu) == 0) {
      *detail = "member " + std::to_string(i + 1) + "'s MTU code " + std::to_string(member.mtu) +
                " is not an ibv_mtu (1=256 .. 5=4096)";
      return RejectReason::BadMtu;
    }
  }
  for (size_t i = 0; i < endpoint.qps.size(); ++i) {
    const QpInfo& qp = endpoint.qps[i];
    if (qp.qpn == 0 || qp.qpn > kMaxQpn) {
      *detail = "QP " + std::to_string(i) + " has QPN " + hex(qp.qpn) + ", outside 0x1..0xffffff";
      return RejectReason::BadQpn;
    }
    if (qp.psn > kMaxPsn) {
      *detail = "QP " + std::to_string(i) + " (qpn " + hex(qp.qpn) + ") has starting PSN " +
                hex(qp.psn) + ", wider than 24 bits";
      return RejectReason::BadPsn;
    }
  }
  return RejectReason::None;
}

RejectReason check_ring(const RemoteRing& ring, std::string_view what, std::string* detail) {
  if (ring.address == 0) {
    *detail = std::string(what) + " address is 0";
    return RejectReason::BadAddress;
  }
  const bool count_ok = ring.slot_count >= 1 && ring.slot_count <= kMaxRingSlots &&
                        (ring.slot_count & (ring.slot_count - 1)) == 0;
  const bool size_ok =
      ring.slot_size >= 8 && ring.slot_size <= kMaxRingSlotSize && ring.slot_size % 8 == 0;
  if (!count_ok || !size_ok ||
      static_cast<uint64_t>(ring.slot_count) * ring.slot_size > kMaxRingBytes) {
    *detail = std::string(what) + " has " + std::to_string(ring.slot_count) + " slots of " +
              std::to_string(ring.slot_size) + " bytes; slots must be a power of two up to " +
              std::to_string(kMaxRingSlots) + ", slot size a multiple of 8 in 8.." +
              std::to_string(kMaxRingSlotSize) + ", the ring at most " +
              std::to_string(kMaxRingBytes) + " bytes";
    return RejectReason::BadSlots;
  }
  return RejectReason::None;
}

void write_endpoint(ByteWriter& writer, const EndpointInfo& endpoint) {
  writer.u32(endpoint.plugin_version);
  writer.u8(static_cast<uint8_t>(endpoint.device_name.size()));
  writer.text(endpoint.device_name);
  writer.bytes(endpoint.gid);
  writer.u8(endpoint.gid_index);
  writer.u8(endpoint.mtu);
  writer.u16(endpoint.traffic_class);
  writer.u8(endpoint.service_level);
  writer.u8(static_cast<uint8_t>(endpoint.qps.size()));
  for (const QpInfo& qp : endpoint.qps) {
    writer.u32(qp.qpn);
    writer.u32(qp.psn);
  }
  writer.u8(endpoint.member_count);
  for (const MemberInfo& member : endpoint.more_members) {
    writer.bytes(member.gid);
    writer.u8(member.gid_index);
    writer.u8(member.mtu);
  }
}

void write_ring(ByteWriter& writer, const RemoteRing& ring) {
  writer.u64(ring.address);
  writer.u32(ring.rkey);
  writer.u32(ring.slot_count);
  writer.u32(ring.slot_size);
}

bool read_endpoint(ByteReader& reader, EndpointInfo* endpoint) {
  uint8_t name_length = 0;
  uint8_t qp_count = 0;
  if (!reader.u32(&endpoint->plugin_version) || !reader.u8(&name_length) ||
      !reader.text(name_length, &endpoint->device_name) || !reader.bytes(endpoint->gid) ||
      !reader.u8(&endpoint->gid_index) || !reader.u8(&endpoint->mtu) ||
      !reader.u16(&endpoint->traffic_class) || !reader.u8(&endpoint->service_level) ||
      !reader.u8(&qp_count)) {
    return false;
  }
  // Each QP needs 8 bytes: checking before resizing keeps a lying count from allocating.
  if (reader.remaining() < static_cast<size_t>(qp_count) * 8) {
    return false;
  }
  endpoint->qps.resize(qp_count);
  for (QpInfo& qp : endpoint->qps) {
    reader.u32(&qp.qpn);
    reader.u32(&qp.psn);
  }
  if (!reader.u8(&endpoint->member_count)) {
    return false;
  }
  // 18 bytes per further member, checked before resizing as for the QPs.
  const size_t more = endpoint->member_count > 0 ? endpoint->member_count - 1U : 0U;
  if (reader.remaining() < more * 18) {
    return false;
  }
  endpoint->more_members.resize(more);
  for (MemberInfo& member : endpoint->more_members) {
    reader.bytes(member.gid);
    reader.u8(&member.gid_index);
    reader.u8(&member.mtu);
  }
  return true;
}

void write_ece(ByteWriter& writer, const Ece& ece) {
  writer.u8(ece.supported);
  writer.u32(ece.vendor_id);
  writer.u32(ece.options);
  writer.u32(ece.comp_mask);
}

bool read_ece(ByteReader& reader, Ece* ece) {
  return reader.u8(&ece->supported) && reader.u32(&ece->vendor_id) && reader.u32(&ece->options) &&
         reader.u32(&ece->comp_mask);
}

RejectReason check_ece(const Ece& ece, std::string* detail) {
  if (ece.supported > 1) {
    *detail = "ECE supported flag " + std::to_string(ece.supported) + " is not 0 or 1";
    return RejectReason::BadEce;
  }
  if (ece.supported == 0 && (ece.vendor_id != 0 || ece.options != 0 || ece.comp_mask != 0)) {
    *detail = "ECE marked unsupported carries vendor id " + hex(ece.vendor_id) + ", options " +
              hex(ece.options) + ", comp_mask " + hex(ece.comp_mask) + " (all must be 0)";
    return RejectReason::BadEce;
  }
  return RejectReason::None;
}

bool read_ring(ByteReader& reader, RemoteRing* ring) {
  return reader.u64(&ring->address) && reader.u32(&ring->rkey) && reader.u32(&ring->slot_count) &&
         reader.u32(&ring->slot_size);
}

bool read_body(ByteReader& reader, MessageKind kind, HandshakeMessage* message) {
  switch (kind) {
    case MessageKind::ConnectRequest: {
      ConnectRequest request;
      if (!reader.u64(&request.nonce) || !read_endpoint(reader, &request.endpoint) ||
          !read_ring(reader, &request.cts_ring) || !reader.u32(&request.max_recvs) ||
          !reader.u8(&request.split_data) || !read_ece(reader, &request.ece)) {
        return false;
      }
      *message = std::move(request);
      return true;
    }
    case MessageKind::ConnectReply: {
      ConnectReply reply;
      uint8_t rkeys = 0;
      if (!reader.u64(&reply.nonce) || !read_endpoint(reader, &reply.endpoint) ||
          !read_ring(reader, &reply.sizes_area) || !read_ece(reader, &reply.ece) ||
          !reader.u8(&rkeys) || reader.remaining() < size_t{rkeys} * 4) {
        return false;
      }
      reply.more_sizes_rkeys.resize(rkeys);
      for (uint32_t& rkey : reply.more_sizes_rkeys) {
        reader.u32(&rkey);
      }
      *message = std::move(reply);
      return true;
    }
    case MessageKind::Ready: {
      Ready ready;
      if (!reader.u64(&ready.nonce)) {
        return false;
      }
      *message = ready;
      return true;
    }
    case MessageKind::Reject: {
      Reject reject;
      uint16_t length = 0;
      if (!reader.u16(&reject.reason) || !reader.u16(&length) ||
          !reader.text(length, &reject.text) || !reader.u64(&reject.nonce)) {
        return false;
      }
      *message = std::move(reject);
      return true;
    }
  }
  return false;
}

DecodeResult refuse(RejectReason reason, std::string detail) {
  DecodeResult result;
  result.reason = reason;
  result.detail = std::move(detail);
  return result;
}

}  // namespace

const char* reject_reason_name(RejectReason reason) {
  switch (reason) {
    case RejectReason::None:
      return "none";
    case RejectReason::BadMagic:
      return "wrong magic";
    case RejectReason::UnsupportedVersion:
      return "unsupported protocol version";
    case RejectReason::UnknownKind:
      return "unknown message kind";
    case RejectReason::LengthMismatch:
      return "length mismatch";
    case RejectReason::Truncated:
      return "truncated message";
    case RejectReason::BadQpCount:
      return "invalid QP count";
    case RejectReason::BadQpn:
      return "invalid QPN";
    case RejectReason::BadPsn:
      return "invalid PSN";
    case RejectReason::BadMtu:
      return "invalid MTU";
    case RejectReason::ZeroGid:
      return "zero GID";
    case RejectReason::BadTrafficClass:
      return "traffic class out of range";
    case RejectReason::BadServiceLevel:
      return "service level out of range";
    case RejectReason::WrongNonce:
      return "wrong nonce";
    case RejectReason::BadSlots:
      return "invalid ring slots";
    case RejectReason::BadDeviceName:
      return "invalid device name";
    case RejectReason::BadAddress:
      return "invalid ring address";
    case RejectReason::BadMaxRecvs:
      return "invalid maxRecvs";
    case RejectReason::BadRejectText:
      return "invalid reject text";
    case RejectReason::BadSplitMode:
      return "invalid split mode";
    case RejectReason::BadEce:
      return "invalid ECE";
    case RejectReason::BadMembers:
      return "invalid virtual NIC members";
    case RejectReason::TrafficClassMismatch:
      return "traffic class mismatch";
    case RejectReason::QpCountMismatch:
      return "QP count mismatch";
    case RejectReason::MtuMismatch:
      return "MTU mismatch";
    case RejectReason::ResourceFailure:
      return "resource failure";
    case RejectReason::ShuttingDown:
      return "shutting down";
    case RejectReason::Internal:
      return "internal error";
    case RejectReason::MemberCountMismatch:
      return "virtual NIC member count mismatch";
  }
  return "unknown reason";
}

std::string reject_reason_name(uint16_t code) {
  const auto reason = static_cast<RejectReason>(code);
  std::string name = reject_reason_name(reason);
  if (name == "unknown reason") {
    return "reason " + std::to_string(code);
  }
  return name;
}

MessageKind kind_of(const HandshakeMessage& message) {
  switch (message.index()) {
    case 0:
      return MessageKind::ConnectRequest;
    case 1:
      return MessageKind::ConnectReply;
    case 2:
      return MessageKind::Ready;
    default:
      return MessageKind::Reject;
  }
}

const char* message_kind_name(MessageKind kind) {
  switch (kind) {
    case MessageKind::ConnectRequest:
      return "ConnectRequest";
    case MessageKind::ConnectReply:
      return "ConnectReply";
    case MessageKind::Ready:
      return "Ready";
    case MessageKind::Reject:
      return "Reject";
  }
  return "unknown";
}

RejectReason validate_message(const HandshakeMessage& message, const DecodeExpectations& expect,
                              std::string* detail) {
  if (const auto* request = std::get_if<ConnectRequest>(&message)) {
    RejectReason reason = check_nonce(request->nonce, expect, detail);
    if (reason == RejectReason::None) {
      reason = check_endpoint(request->endpoint, detail);
    }
    if (reason == RejectReason::None) {
      reason = check_ring(request->cts_ring, "clear-to-send ring", detail);
    }
    if (reason == RejectReason::None &&
        (request->max_recvs < 1 || request->max_recvs > kMaxRecvsLimit)) {
      *detail = "maxRecvs " + std::to_string(request->max_recvs) + " is outside 1.." +
                std::to_string(kMaxRecvsLimit);
      reason = RejectReason::BadMaxRecvs;
    }
    if (reason == RejectReason::None && request->split_data > 1) {
      *detail = "split mode " + std::to_string(request->split_data) + " is not 0 or 1";
      reason = RejectReason::BadSplitMode;
    }
    if (reason == RejectReason::None) {
      reason = check_ece(request->ece, detail);
    }
    return reason;
  }
  if (const auto* reply = std::get_if<ConnectReply>(&message)) {
    RejectReason reason = check_nonce(reply->nonce, expect, detail);
    if (reason == RejectReason::None) {
      reason = check_endpoint(reply->endpoint, detail);
    }
    if (reason == RejectReason::None) {
      reason = check_ring(reply->sizes_area, "sizes area", detail);
    }
    if (reason == RejectReason::None) {
      reason = check_ece(reply->ece, detail);
    }
    if (reason == RejectReason::None &&
        reply->more_sizes_rkeys.size() + 1 != reply->endpoint.member_count) {
      *detail = std::to_string(reply->more_sizes_rkeys.size()) +
                " sizes-area keys for members after the first, but " +
                std::to_string(reply->endpoint.member_count) + " members";
      reason = RejectReason::BadMembers;
    }
    return reason;
  }
  if (const auto* ready = std::get_if<Ready>(&message)) {
    return check_nonce(ready->nonce, expect, detail);
  }
  const auto& reject = std::get<Reject>(message);
  if (reject.text.size() > kMaxRejectTextLength || !printable(reject.text)) {
    *detail = "reject text '" + escaped(reject.text.substr(0, 64)) + "' must be at most " +
              std::to_string(kMaxRejectTextLength) + " printable ASCII characters";
    return RejectReason::BadRejectText;
  }
  if (reject.nonce != 0) {
    return check_nonce(reject.nonce, expect, detail);
  }
  return RejectReason::None;
}

DecodeResult decode_message(std::span<const uint8_t> bytes, const DecodeExpectations& expect) {
  if (bytes.size() < kHandshakeHeaderSize) {
    return refuse(RejectReason::Truncated,
                  std::to_string(bytes.size()) + " bytes, shorter than the " +
                      std::to_string(kHandshakeHeaderSize) + "-byte header");
  }
  ByteReader header(bytes.first(kHandshakeHeaderSize));
  uint32_t magic = 0;
  uint16_t version = 0;
  uint16_t kind_code = 0;
  uint32_t body_length = 0;
  header.u32(&magic);
  header.u16(&version);
  header.u16(&kind_code);
  header.u32(&body_length);
  if (magic != kHandshakeMagic) {
    return refuse(RejectReason::BadMagic,
                  "magic " + hex(magic) + ", expected " + hex(kHandshakeMagic) +
                      ": the peer is not this plugin's handshake (another program on the port?)");
  }
  if (version != kHandshakeVersion) {
    return refuse(RejectReason::UnsupportedVersion,
                  "the peer speaks handshake version " + std::to_string(version) +
                      ", this plugin (nccl-net-roce " ROCE_VERSION ") speaks version " +
                      std::to_string(kHandshakeVersion) +
                      "; run the same plugin version on every node");
  }
  if (kind_code < static_cast<uint16_t>(MessageKind::ConnectRequest) ||
      kind_code > static_cast<uint16_t>(MessageKind::Reject)) {
    return refuse(RejectReason::UnknownKind, "message kind " + std::to_string(kind_code) +
                                                 " is not one of 1..4 (request, reply, ready, "
                                                 "reject)");
  }
  const size_t available = bytes.size() - kHandshakeHeaderSize;
  if (body_length != available) {
    return refuse(RejectReason::LengthMismatch, "header announces a " +
                                                    std::to_string(body_length) + "-byte body, " +
                                                    std::to_string(available) + " bytes follow it");
  }
  const auto kind = static_cast<MessageKind>(kind_code);
  ByteReader body(bytes.subspan(kHandshakeHeaderSize));
  HandshakeMessage message;
  if (!read_body(body, kind, &message)) {
    return refuse(RejectReason::Truncated, std::string(message_kind_name(kind)) + " body of " +
                                               std::to_string(body_length) +
                                               " bytes ends inside a field");
  }
  if (body.remaining() != 0) {
    return refuse(RejectReason::LengthMismatch,
                  std::string(message_kind_name(kind)) + " body has " +
                      std::to_string(body.remaining()) + " bytes after its last field");
  }
  DecodeResult result;
  result.reason = validate_message(message, expect, &result.detail);
  if (result.ok()) {
    result.message = std::move(message);
  }
  return result;
}

Result<std::vector<uint8_t>> encode_message(const HandshakeMessage& message) {
  std::string detail;
  const RejectReason reason = validate_message(message, {}, &detail);
  if (reason != RejectReason::None) {
    return failure(std::string("refusing to send an invalid ") +
                   message_kind_name(kind_of(message)) + ": " + detail);
  }
  std::vector<uint8_t> body;
  body.reserve(256);  // a 16-QP request is 237 bytes: one allocation
  ByteWriter writer(&body);
  if (const auto* request = std::get_if<ConnectRequest>(&message)) {
    writer.u64(request->nonce);
    write_endpoint(writer, request->endpoint);
    write_ring(writer, request->cts_ring);
    writer.u32(request->max_recvs);
    writer.u8(request->split_data);
    write_ece(writer, request->ece);
  } else if (const auto* reply = std::get_if<ConnectReply>(&message)) {
    writer.u64(reply->nonce);
    write_endpoint(writer, reply->endpoint);
    write_ring(writer, reply->sizes_area);
    write_ece(writer, reply->ece);
    writer.u8(static_cast<uint8_t>(reply->more_sizes_rkeys.size()));
    for (const uint32_t rkey : reply->more_sizes_rkeys) {
      writer.u32(rkey);
    }
  } else if (const auto* ready = std::get_if<Ready>(&message)) {
    writer.u64(ready->nonce);
  } else {
    const auto& reject = std::get<Reject>(message);
    writer.u16(reject.reason);
    writer.u16(static_cast<uint16_t>(reject.text.size()));
    writer.text(reject.text);
    writer.u64(reject.nonce);
  }
  std::vector<uint8_t> out;
  out.reserve(kHandshakeHeaderSize + body.size());
  ByteWriter header(&out);
  header.u32(kHandshakeMagic);
  header.u16(kHandshakeVersion);
  header.u16(static_cast<uint16_t>(kind_of(message)));
  header.u32(static_cast<uint32_t>(body.size()));
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

uint32_t plugin_version_code() {
  // ROCE_VERSION is "major.minor.patch" (CMake's PROJECT_VERSION).
  constexpr std::string_view version = ROCE_VERSION;
  std::array<unsigned, 3> parts{};
  const char* next = version.data();
  const char* const end = version.data() + version.size();
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0 && (next == end || *next++ != '.')) {
      return 0;
    }
    const auto [ptr, ec] = std::from_chars(next, end, parts[i]);
    if (ec != std::errc{}) {
      return 0;
    }
    next = ptr;
  }
  if (next != end) {
    return 0;
  }
  const auto [major, minor, patch] = parts;
  return ((major & 0xffffU) << 16) | ((minor & 0xffU) << 8) | (patch & 0xffU);
}

std::string plugin_version_text(uint32_t code) {
  return std::to_string(code >> 16) + "." + std::to_string((code >> 8) & 0xff) + "." +
         std::to_string(code & 0xff);
}

}  // namespace roce::net
