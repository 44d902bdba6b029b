// pcap and pcapng parsing (see capture_reader.h). Every length read from the file is checked
// against the bytes that remain before it is used.
#include "capture_reader.h"

#include <cstdio>
#include <cstring>

namespace vroce::pcapcheck {
namespace {

constexpr std::uint32_t kPcapMagicUs = 0xa1b2c3d4;
constexpr std::uint32_t kPcapMagicNs = 0xa1b23c4d;
constexpr std::uint32_t kPcapngSectionHeader = 0x0a0d0d0a;
constexpr std::uint32_t kPcapngByteOrderMagic = 0x1a2b3c4d;
constexpr std::size_t kPcapFileHeaderSize = 24;
constexpr std::size_t kPcapRecordHeaderSize = 16;

constexpr std::uint32_t kBlockInterfaceDescription = 1;
constexpr std::uint32_t kBlockObsoletePacket = 2;
constexpr std::uint32_t kBlockSimplePacket = 3;
constexpr std::uint32_t kBlockEnhancedPacket = 6;

std::uint32_t raw32(std::span<const std::uint8_t> f, std::size_t off) {
  std::uint32_t v;
  std::memcpy(&v, f.data() + off, 4);
  return v;
}

std::string at(std::size_t offset) {
  return " at byte offset " + std::to_string(offset);
}

}  // namespace

std::uint32_t CaptureReader::u32(std::size_t offset) const {
  const std::uint32_t v = raw32(file_, offset);
  return swapped_ ? __builtin_bswap32(v) : v;
}

std::uint16_t CaptureReader::u16(std::size_t offset) const {
  std::uint16_t v;
  std::memcpy(&v, file_.data() + offset, 2);
  return swapped_ ? __builtin_bswap16(v) : v;
}

Result<CaptureReader> CaptureReader::open(std::span<const std::uint8_t> file) {
  if (file.size() < 4) {
    return failure("file too short for a capture header (" + std::to_string(file.size()) +
                   " bytes)");
  }
  const std::uint32_t magic = raw32(file, 0);
  if (magic == kPcapMagicUs || magic == kPcapMagicNs || __builtin_bswap32(magic) == kPcapMagicUs ||
      __builtin_bswap32(magic) == kPcapMagicNs) {
    CaptureReader r(file, Format::Pcap);
    r.swapped_ = magic != kPcapMagicUs && magic != kPcapMagicNs;
    if (file.size() < kPcapFileHeaderSize) {
      return failure("pcap file header cut short (" + std::to_string(file.size()) +
                     " of 24 bytes)");
    }
    const std::uint16_t major = r.u16(4);
    if (major != 2) {
      return failure("pcap version " + std::to_string(major) + " is not 2");
    }
    // The low 28 bits are the link type; the top bits may carry FCS information.
    r.pcap_link_type_ = r.u32(20) & 0x0FFFFFFF;
    r.pos_ = kPcapFileHeaderSize;
    return r;
  }
  if (magic == kPcapngSectionHeader) {
    CaptureReader r(file, Format::Pcapng);
    return r;  // the section header is read as the first block
  }
  return failure("not a pcap or pcapng file (magic 0x" + [&] {
    char buf[9];
    std::snprintf(buf, sizeof buf, "%08x", magic);
    return std::string(buf);
  }() + ")");
}

Result<CaptureReader::Next> CaptureReader::next(Frame* frame) {
  return format_ == Format::Pcap ? next_pcap(frame) : next_pcapng(frame);
}

Result<CaptureReader::Next> CaptureReader::next_pcap(Frame* frame) {
  if (pos_ == file_.size()) {
    return Next::End;
  }
  if (file_.size() - pos_ < kPcapRecordHeaderSize) {
    return failure("record header cut short" + at(pos_));
  }
  const std::uint32_t incl = u32(pos_ + 8);
  const std::uint32_t orig = u32(pos_ + 12);
  if (incl > file_.size() - pos_ - kPcapRecordHeaderSize) {
    return failure("record of " + std::to_string(incl) + " bytes runs past the end of the file" +
                   at(pos_));
  }
  if (orig < incl) {
    return failure("record claims more captured (" + std::to_string(incl) + ") than original (" +
                   std::to_string(orig) + ") bytes" + at(pos_));
  }
  frame->number = ++frames_;
  frame->link_type = pcap_link_type_;
  frame->data = file_.subspan(pos_ + kPcapRecordHeaderSize, incl);
  frame->original_length = orig;
  pos_ += kPcapRecordHeaderSize + incl;
  return Next::Frame;
}

Result<CaptureReader::Next> CaptureReader::next_pcapng(Frame* frame) {
  for (;;) {
    if (pos_ == file_.size()) {
      return Next::End;
    }
    if (file_.size() - pos_ < 12) {
      return failure("pcapng block header cut short" + at(pos_));
    }
    const std::uint32_t raw_type = raw32(file_, pos_);
    if (raw_type == kPcapngSectionHeader) {
      // A new section: its byte-order magic decides how everything after it is read.
      if (file_.size() - pos_ < 28) {
        return failure("pcapng section header cut short" + at(pos_));
      }
      const std::uint32_t bom = raw32(file_, pos_ + 8);
      if (bom == kPcapngByteOrderMagic) {
        swapped_ = false;
      } else if (__builtin_bswap32(bom) == kPcapngByteOrderMagic) {
        swapped_ = true;
      } else {
        return failure("pcapng section header with an unknown byte-order magic" + at(pos_));
      }
      interfaces_.clear();
      snaplens_.clear();
    }
    const std::uint32_t type = u32(pos_);
    const std::uint32_t len = u32(pos_ + 4);
    if (len < 12 || len % 4 != 0 || len > file_.size() - pos_) {
      return failure("pcapng block of length " + std::to_string(len) + " is invalid" + at(pos_));
    }
    if (u32(pos_ + len - 4) != len) {
      return failure("pcapng block trailer length does not match its header" + at(pos_));
    }
    const std::size_t body = pos_ + 8;
    const std::size_t body_len = len - 12;
    const std::size_t block = pos_;
    pos_ += len;
    switch (type) {
      case kBlockInterfaceDescription:
        if (body_len < 8) {
          return failure("pcapng interface description too short" + at(block));
        }
        interfaces_.push_back(u16(body));
        snaplens_.push_back(u32(body + 4));
        continue;
      case kBlockEnhancedPacket:
      case kBlockObsoletePacket: {
        if (body_len < 20) {
          return failure("pcapng packet block too short" + at(block));
        }
        const std::uint32_t iface =
            type == kBlockEnhancedPacket ? u32(body) : std::uint32_t{u16(body)};
        const std::uint32_t incl = u32(body + 12);
        const std::uint32_t orig = u32(body + 16);
        if (iface >= interfaces_.size()) {
          return failure("pcapng packet for undeclared interface " + std::to_string(iface) +
                         at(block));
        }
        if (incl > body_len - 20 || orig < incl) {
          return failure("pcapng packet lengths do not fit its block" + at(block));
        }
        frame->number = ++frames_;
        frame->link_type = interfaces_[iface];
        frame->data = file_.subspan(body + 20, incl);
        frame->original_length = orig;
        return Next::Frame;
      }
      case kBlockSimplePacket: {
        if (body_len < 4 || interfaces_.empty()) {
          return failure("pcapng simple packet block without an interface or too short" +
                         at(block));
        }
        const std::uint32_t orig = u32(body);
        std::size_t incl = orig;
        if (snaplens_[0] != 0 && incl > snaplens_[0]) {
          incl = snaplens_[0];
        }
        if (incl > body_len - 4) {
          return failure("pcapng simple packet runs past its block" + at(block));
        }
        frame->number = ++frames_;
        frame->link_type = interfaces_[0];
        frame->data = file_.subspan(body + 4, incl);
        frame->original_length = orig;
        return Next::Frame;
      }
      default:
        continue;  // section header (handled above), statistics, name resolution, custom ...
    }
  }
}

}  // namespace vroce::pcapcheck
