// libFuzzer target: the handshake decoder (plugin/net/handshake.h decode_message), with and
// without an expected nonce, and the recovery-epoch frame decoder (plugin/net/epoch_frames.h),
// which reads the same header. Properties beyond "no crash, no sanitizer report": a message that
// decodes re-encodes (encode applies the same validation) and decodes to the same value.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>

#include "net/epoch_frames.h"
#include "net/handshake.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace roce::net;
  const std::span<const uint8_t> bytes(data, size);
  DecodeResult any = decode_message(bytes);
  if (any.ok() != any.message.has_value()) {
    std::abort();
  }
  if (any.ok()) {
    auto encoded = encode_message(*any.message);
    if (!encoded) {
      std::abort();  // decoded but refused by encode: the two validations disagree
    }
    DecodeResult again = decode_message(*encoded);
    if (!again.ok() || !(*again.message == *any.message)) {
      std::abort();
    }
  } else if (any.detail.empty()) {
    std::abort();  // every refusal names its field
  }
  // The same bytes checked against a nonce (the nonce a listener would hold).
  if (size >= 8) {
    DecodeExpectations expect;
    uint64_t nonce = 0;
    std::memcpy(&nonce, data + size - 8, 8);
    expect.nonce = nonce;
    (void)decode_message(bytes, expect);
  }
  // As an epoch frame, with the nonce where the frame carries it (after the 12-byte header).
  uint64_t epoch_nonce = 0;
  if (size >= 20) {
    std::memcpy(&epoch_nonce, data + 12, 8);
  }
  const EpochDecodeResult epoch = decode_epoch_frame(bytes, epoch_nonce);
  if (epoch.ok()) {
    auto encoded = encode_epoch_frame(epoch.frame);
    if (!encoded || encoded->size() != size + 4 ||
        std::memcmp(encoded->data() + 4, data, size) != 0) {
      std::abort();  // a valid frame has exactly one encoding: the bytes it came from
    }
  } else if (epoch.error.empty()) {
    std::abort();
  }
  return 0;
}
