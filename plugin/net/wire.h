// Little-endian field writer and bounds-checked reader for the bootstrap's wire formats (listen
// handle, handshake messages). The reader never reads past its span: a short buffer turns every
// later read into a failure that the caller reports as "truncated".
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace roce::net {

// The framing of the bootstrap socket (FramedChannel, the peer watch's frames): each message is
// preceded by its length, u32 little-endian.
inline constexpr size_t kFrameLengthBytes = 4;

class ByteWriter {
 public:
  explicit ByteWriter(std::vector<uint8_t>* out) : out_(out) {}

  void u8(uint8_t value) { out_->push_back(value); }
  void u16(uint16_t value) { put(value, 2); }
  void u32(uint32_t value) { put(value, 4); }
  void u64(uint64_t value) { put(value, 8); }
  void bytes(std::span<const uint8_t> data) { out_->insert(out_->end(), data.begin(), data.end()); }
  void text(std::string_view data) { out_->insert(out_->end(), data.begin(), data.end()); }

 private:
  void put(uint64_t value, int size) {
    for (int i = 0; i < size; ++i) {
      out_->push_back(static_cast<uint8_t>(value >> (8 * i)));
    }
  }
  std::vector<uint8_t>* out_;
};

class ByteReader {
 public:
  explicit ByteReader(std::span<const uint8_t> data) : data_(data) {}

  // Each returns false (and reads nothing) when fewer bytes remain than the field needs.
  bool u8(uint8_t* value) { return get(value, 1); }
  bool u16(uint16_t* value) { return get(value, 2); }
  bool u32(uint32_t* value) { return get(value, 4); }
  bool u64(uint64_t* value) { return get(value, 8); }
  bool bytes(std::span<uint8_t> out) {
    if (remaining() < out.size()) {
      return false;
    }
    for (size_t i = 0; i < out.size(); ++i) {
      out[i] = data_[offset_ + i];
    }
    offset_ += out.size();
    return true;
  }
  bool text(size_t length, std::string* out) {
    if (remaining() < length) {
      return false;
    }
    out->assign(reinterpret_cast<const char*>(data_.data() + offset_), length);
    offset_ += length;
    return true;
  }

  size_t remaining() const { return data_.size() - offset_; }
  size_t offset() const { return offset_; }

 private:
  template <typename T>
  bool get(T* value, size_t size) {
    if (remaining() < size) {
      return false;
    }
    uint64_t result = 0;
    for (size_t i = 0; i < size; ++i) {
      result |= static_cast<uint64_t>(data_[offset_ + i]) << (8 * i);
    }
    offset_ += size;
    *value = static_cast<T>(result);
    return true;
  }
  std::span<const uint8_t> data_;
  size_t offset_ = 0;
};

}  // namespace roce::net
