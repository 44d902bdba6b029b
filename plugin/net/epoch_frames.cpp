// The frames of a recovery epoch: see epoch_frames.h.
#include "net/epoch_frames.h"

#include <fmt/format.h>

#include <type_traits>

#include "net/wire.h"

namespace roce::net {
namespace {

constexpr size_t kEpochQpBytes = 9;

// Why the QP list is not what the frame's members allow; empty when it is.
std::string check_qps(const std::vector<EpochQp>& qps, uint8_t live_members) {
  if (qps.empty() || qps.size() > kMaxQpsPerConnection) {
    return fmt::format("QP count {} (1..{})", qps.size(), kMaxQpsPerConnection);
  }
  for (size_t i = 0; i < qps.size(); ++i) {
    const EpochQp& qp = qps[i];
    if (qp.member >= kMaxMembers || ((live_members >> qp.member) & 1U) == 0) {
      return fmt::format("QP {} on member {}, which is not live (live members 0x{:02x})", i,
                         qp.member, live_members);
    }
    if (qp.qpn == 0 || qp.qpn > kMaxQpn) {
      return fmt::format("QP {} has QPN {} (1..{})", i, qp.qpn, kMaxQpn);
    }
    if (qp.psn > kMaxPsn) {
      return fmt::format("QP {} has PSN {} (0..{})", i, qp.psn, kMaxPsn);
    }
  }
  return {};
}

std::string check(const EpochWanted& f) {
  // Any epoch number (0: none seen) and any mask of down members; a member is not both.
  return (f.down_members & f.back_members) != 0
             ? fmt::format("members 0x{:x} both down and back", f.down_members & f.back_members)
             : std::string();
}

std::string check(const EpochGo& f) {
  return f.epoch == 0 ? "epoch 0 (epochs start at 1)" : std::string();
}

std::string check(const EpochStart& f) {
  if (f.epoch == 0) {
    return "epoch 0 (epochs start at 1)";
  }
  if (f.live_members == 0) {
    return "no live member";
  }
  if (f.ring_rkeys.size() != static_cast<size_t>(__builtin_popcount(f.live_members))) {
    return fmt::format("{} ring keys for {} live members", f.ring_rkeys.size(),
                       __builtin_popcount(f.live_members));
  }
  return check_qps(f.qps, f.live_members);
}

std::string check(const EpochReady& f) {
  if (f.epoch == 0) {
    return "epoch 0 (epochs start at 1)";
  }
  if (f.next_seq < f.low_seq || f.next_seq - f.low_seq > kEpochWindow) {
    return fmt::format("sequences {}..{}: the window is 0..{} wide", f.low_seq, f.next_seq,
                       kEpochWindow);
  }
  const uint64_t width = f.next_seq - f.low_seq;
  if (width < kEpochWindow && (f.done >> width) != 0) {
    return fmt::format("done bitmap 0x{:x} marks sequences at or past {}", f.done, f.next_seq);
  }
  if (width > 0 && (f.done & 1U) != 0) {
    return fmt::format("done bitmap 0x{:x} marks sequence {}, the first incomplete one", f.done,
                       f.low_seq);
  }
  if (f.live_members == 0) {
    return "no live member";
  }
  if (f.cts_entries.size() > kMaxEpochCtsEntries) {
    return fmt::format("{} clear-to-send entries (at most {})", f.cts_entries.size(),
                       kMaxEpochCtsEntries);
  }
  return check_qps(f.qps, f.live_members);
}

void write_qps(ByteWriter& out, const std::vector<EpochQp>& qps) {
  out.u16(static_cast<uint16_t>(qps.size()));
  for (const EpochQp& qp : qps) {
    out.u8(qp.member);
    out.u32(qp.qpn);
    out.u32(qp.psn);
  }
}

bool read_qps(ByteReader& in, std::vector<EpochQp>* qps) {
  uint16_t count = 0;
  if (!in.u16(&count) || in.remaining() < size_t{count} * kEpochQpBytes) {
    return false;
  }
  qps->resize(count);
  for (EpochQp& qp : *qps) {
    static_cast<void>(in.u8(&qp.member) && in.u32(&qp.qpn) && in.u32(&qp.psn));
  }
  return true;
}

void write_body(ByteWriter& out, const EpochWanted& f) {
  out.u8(f.down_members);
  out.u8(f.back_members);
}
void write_body(ByteWriter& /*out*/, const EpochGo& /*f*/) {}
void write_body(ByteWriter& out, const EpochStart& f) {
  out.u64(f.next_seq);
  out.u8(f.live_members);
  for (const uint32_t rkey : f.ring_rkeys) {
    out.u32(rkey);
  }
  write_qps(out, f.qps);
}
void write_body(ByteWriter& out, const EpochReady& f) {
  out.u64(f.low_seq);
  out.u64(f.next_seq);
  out.u64(f.done);
  out.u8(f.live_members);
  write_qps(out, f.qps);
  out.u16(static_cast<uint16_t>(f.cts_entries.size()));
  for (const auto& entry : f.cts_entries) {
    out.bytes(entry);
  }
}

bool read_body(ByteReader& in, EpochWanted* f) {
  return in.u8(&f->down_members) && in.u8(&f->back_members);
}
bool read_body(ByteReader& /*in*/, EpochGo* /*f*/) {
  return true;  // nonce and epoch only
}
bool read_body(ByteReader& in, EpochStart* f) {
  if (!(in.u64(&f->next_seq) && in.u8(&f->live_members))) {
    return false;
  }
  f->ring_rkeys.resize(static_cast<size_t>(__builtin_popcount(f->live_members)));
  for (uint32_t& rkey : f->ring_rkeys) {
    if (!in.u32(&rkey)) {
      return false;
    }
  }
  return read_qps(in, &f->qps);
}
bool read_body(ByteReader& in, EpochReady* f) {
  uint16_t entries = 0;
  if (!(in.u64(&f->low_seq) && in.u64(&f->next_seq) && in.u64(&f->done) &&
        in.u8(&f->live_members) && read_qps(in, &f->qps) && in.u16(&entries))) {
    return false;
  }
  if (in.remaining() < size_t{entries} * kCtsEntryBytes) {
    return false;
  }
  f->cts_entries.resize(entries);
  for (auto& entry : f->cts_entries) {
    static_cast<void>(in.bytes(entry));
  }
  return true;
}

template <typename Frame>
EpochDecodeResult decode_as(ByteReader& in, uint64_t nonce, uint64_t frame_nonce, uint32_t epoch) {
  Frame frame;
  frame.nonce = frame_nonce;
  frame.epoch = epoch;
  EpochDecodeResult result{frame, {}};
  if (!read_body(in, &std::get<Frame>(result.frame))) {
    result.error = "a truncated body";
  } else if (in.remaining() != 0) {
    result.error = fmt::format("{} bytes after the body", in.remaining());
  } else if (frame_nonce != nonce) {
    result.error = fmt::format("nonce 0x{:x}, not this connection's", frame_nonce);
  } else {
    result.error = validate_epoch_frame(result.frame);
  }
  return result;
}

}  // namespace

EpochKind kind_of(const EpochFrame& frame) {
  return std::visit(
      [](const auto& f) {
        using T = std::decay_t<decltype(f)>;
        if constexpr (std::is_same_v<T, EpochWanted>) {
          return EpochKind::Wanted;
        } else if constexpr (std::is_same_v<T, EpochStart>) {
          return EpochKind::Start;
        } else if constexpr (std::is_same_v<T, EpochReady>) {
          return EpochKind::Ready;
        } else {
          return EpochKind::Go;
        }
      },
      frame);
}

const char* epoch_kind_name(EpochKind kind) {
  switch (kind) {
    case EpochKind::Wanted:
      return "EpochWanted";
    case EpochKind::Start:
      return "EpochStart";
    case EpochKind::Ready:
      return "EpochReady";
    case EpochKind::Go:
      return "EpochGo";
  }
  return "unknown";
}

bool is_epoch_kind(uint16_t kind) noexcept {
  return kind >= static_cast<uint16_t>(EpochKind::Wanted) &&
         kind <= static_cast<uint16_t>(EpochKind::Go);
}

std::string validate_epoch_frame(const EpochFrame& frame) {
  return std::visit([](const auto& f) { return check(f); }, frame);
}

EpochDecodeResult decode_epoch_frame(std::span<const uint8_t> bytes, uint64_t nonce) {
  EpochDecodeResult refused{EpochWanted{}, {}};
  if (bytes.size() > kMaxEpochFrameBytes) {
    refused.error =
        fmt::format("a frame of {} bytes (at most {})", bytes.size(), kMaxEpochFrameBytes);
    return refused;
  }
  ByteReader in(bytes);
  uint32_t magic = 0;
  uint16_t version = 0;
  uint16_t kind = 0;
  uint32_t body = 0;
  uint64_t frame_nonce = 0;
  uint32_t epoch = 0;
  if (!(in.u32(&magic) && in.u16(&version) && in.u16(&kind) && in.u32(&body))) {
    refused.error = "a truncated header";
  } else if (magic != kHandshakeMagic) {
    refused.error = fmt::format("magic 0x{:x}", magic);
  } else if (version != kHandshakeVersion) {
    refused.error = fmt::format("handshake version {} (this side {})", version, kHandshakeVersion);
  } else if (body != in.remaining()) {
    refused.error =
        fmt::format("body length {} with {} bytes after the header", body, in.remaining());
  } else if (!is_epoch_kind(kind)) {
    refused.error =
        fmt::format("kind {} (an epoch frame is {}..{})", kind,
                    static_cast<uint16_t>(EpochKind::Wanted), static_cast<uint16_t>(EpochKind::Go));
  } else if (!(in.u64(&frame_nonce) && in.u32(&epoch))) {
    refused.error = "a truncated body";
  }
  if (!refused.ok()) {
    return refused;
  }
  switch (static_cast<EpochKind>(kind)) {
    case EpochKind::Wanted:
      return decode_as<EpochWanted>(in, nonce, frame_nonce, epoch);
    case EpochKind::Start:
      return decode_as<EpochStart>(in, nonce, frame_nonce, epoch);
    case EpochKind::Ready:
      return decode_as<EpochReady>(in, nonce, frame_nonce, epoch);
    case EpochKind::Go:
      return decode_as<EpochGo>(in, nonce, frame_nonce, epoch);
  }
  return refused;  // not reached: is_epoch_kind checked the kind
}

Result<std::vector<uint8_t>> encode_epoch_frame(const EpochFrame& frame) {
  if (std::string error = validate_epoch_frame(frame); !error.empty()) {
    return failure(fmt::format("{} not sent: {}", epoch_kind_name(kind_of(frame)), error));
  }
  std::vector<uint8_t> body;
  ByteWriter body_out(&body);
  std::visit(
      [&](const auto& f) {
        body_out.u64(f.nonce);
        body_out.u32(f.epoch);
        write_body(body_out, f);
      },
      frame);
  std::vector<uint8_t> bytes;
  bytes.reserve(kFrameLengthBytes + kHandshakeHeaderSize + body.size());
  ByteWriter out(&bytes);
  out.u32(static_cast<uint32_t>(kHandshakeHeaderSize + body.size()));
  out.u32(kHandshakeMagic);
  out.u16(kHandshakeVersion);
  out.u16(static_cast<uint16_t>(kind_of(frame)));
  out.u32(static_cast<uint32_t>(body.size()));
  out.bytes(body);
  if (bytes.size() - kFrameLengthBytes > kMaxEpochFrameBytes) {
    return failure(fmt::format("{} not sent: {} bytes (at most {})",
                               epoch_kind_name(kind_of(frame)), bytes.size() - kFrameLengthBytes,
                               kMaxEpochFrameBytes));
  }
  return bytes;
}

}  // namespace roce::net
