// libFuzzer target: the listen handle decoder (plugin/net/listen_handle.h), which reads NCCL's
// opaque 128-byte handle as the other rank wrote it. A handle that decodes must encode back to
// one that decodes to the same endpoint, nonce and stage.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>

#include "net/listen_handle.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace roce::net;
  auto handle = decode_listen_handle(std::span<const uint8_t>(data, size));
  if (!handle) {
    if (handle.error().empty()) {
      std::abort();  // every refusal says why
    }
    return 0;
  }
  std::array<uint8_t, kListenHandleSize> out{};
  encode_listen_handle(*handle, out);
  auto again = decode_listen_handle(out);
  if (!again || again->nonce != handle->nonce || again->stage != handle->stage ||
      again->address.to_string() != handle->address.to_string()) {
    std::abort();
  }
  return 0;
}
