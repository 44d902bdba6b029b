// Reads the frames of a capture file held in memory, without libpcap: classic pcap (either byte
// order, microsecond or nanosecond magic) and pcapng (what tshark and dumpcap write by default:
// section header, interface description, enhanced/simple/obsolete packet blocks).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "util/result.h"

namespace vroce::pcapcheck {

struct Frame {
  std::uint64_t number = 0;  // 1-based, as tshark numbers frames
  std::uint32_t link_type = 0;
  std::span<const std::uint8_t> data;  // the captured bytes
  std::uint32_t original_length = 0;   // the length on the wire (>= data.size())
};

class CaptureReader {
 public:
  enum class Format { Pcap, Pcapng };
  enum class Next { Frame, End };

  // Recognises the format from the first block; fails when the file is neither pcap nor pcapng
  // or its header is cut short.
  static Result<CaptureReader> open(std::span<const std::uint8_t> file);

  // The next frame, End after the last; a malformed record fails naming the byte offset.
  Result<Next> next(Frame* frame);

  Format format() const { return format_; }
  const char* format_name() const { return format_ == Format::Pcap ? "pcap" : "pcapng"; }

 private:
  CaptureReader(std::span<const std::uint8_t> file, Format format) : file_(file), format_(format) {}

  Result<Next> next_pcap(Frame* frame);
  Result<Next> next_pcapng(Frame* frame);
  std::uint32_t u32(std::size_t offset) const;
  std::uint16_t u16(std::size_t offset) const;

  std::span<const std::uint8_t> file_;
  Format format_;
  bool swapped_ = false;  // file byte order differs from this host's
  std::size_t pos_ = 0;
  std::uint64_t frames_ = 0;
  std::uint32_t pcap_link_type_ = 0;
  std::vector<std::uint32_t> interfaces_;  // pcapng: link type per interface id
  std::vector<std::uint32_t> snaplens_;    // pcapng: snap length per interface id
};

}  // namespace vroce::pcapcheck
