#include "packet_io/fault_injector.h"

namespace vroce::packet_io {

FaultInjector::FaultInjector(const FaultSpec& spec)
    : spec_(spec), enabled_(spec.any()), random_(spec.seed) {
  for (uint32_t psn : spec.drop_psns) {
    psn_targets_.insert(psn & 0xFFFFFF);
  }
}

bool FaultInjector::chance(double probability) {
  if (probability <= 0) {
    return false;
  }
  if (probability >= 1) {
    return true;
  }
  return std::uniform_real_distribution<double>(0.0, 1.0)(random_) < probability;
}

FaultVerdict FaultInjector::decide(uint32_t dest_qpn, uint32_t psn, bool data, bool request) {
  FaultVerdict verdict;
  if (!enabled_) {
    return verdict;
  }
  if (data) {
    ++data_packets_;
    if (spec_.drop_every != 0 && data_packets_ % spec_.drop_every == 0) {
      verdict.drop = true;
    }
  }
  if (request && psn_targets_.count(psn) != 0) {
    uint64_t key = (uint64_t{dest_qpn} << 24) | psn;
    if (psns_dropped_.insert(key).second) {
      verdict.drop = true;
    }
  }
  if (chance(spec_.drop_probability)) {
    verdict.drop = true;
  }
  if (verdict.drop) {
    return verdict;
  }
  verdict.duplicate = chance(spec_.duplicate_probability);
  verdict.corrupt = chance(spec_.corrupt_probability);
  verdict.reorder = chance(spec_.reorder_probability);
  verdict.ecn_mark = data && chance(spec_.ecn_mark_probability);
  return verdict;
}

size_t FaultInjector::corrupt_offset(size_t length) noexcept {
  constexpr size_t kBth = 12;
  constexpr size_t kIcrc = 4;
  if (length > kBth + kIcrc) {
    return kBth + (length - kBth - kIcrc) / 2;
  }
  return 9;  // a PSN byte of the BTH
}

}  // namespace vroce::packet_io
