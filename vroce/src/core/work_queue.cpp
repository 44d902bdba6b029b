#include "core/work_queue.h"

#include <algorithm>
#include <bit>

namespace vroce::core {

void SendQueue::init(uint32_t max_wr, uint32_t max_sge, uint32_t max_inline) {
  capacity_ = std::bit_ceil(std::max(max_wr, 1u));
  mask_ = capacity_ - 1;
  max_sge_ = std::max(max_sge, 1u);
  max_inline_ = max_inline;
  wqes_.assign(capacity_, SendWqe{});
  sges_.assign(static_cast<size_t>(capacity_) * max_sge_, ibv_sge{});
  inline_.assign(static_cast<size_t>(capacity_) * max_inline_, 0);
}

void RecvQueue::init(uint32_t max_wr, uint32_t max_sge) {
  capacity_ = std::bit_ceil(std::max(max_wr, 1u));
  mask_ = capacity_ - 1;
  max_sge_ = std::max(max_sge, 1u);
  wqes_.assign(capacity_, RecvWqe{});
  sges_.assign(static_cast<size_t>(capacity_) * max_sge_, ibv_sge{});
}

}  // namespace vroce::core
