// Static-rate conversions between enum ibv_rate, multiples of 2.5 Gb/s and Mb/s (the lanes'
// signalling rate: an EDR lane runs at 25.78125 Gb/s). The enum's numbering is historical, not
// ordered by speed, hence explicit tables.
#include <iterator>

#include "abi/export.h"
#include "abi/private_decls.h"

namespace {

struct RateRow {
  ibv_rate rate;
  int mbps;
};

constexpr RateRow kRates[] = {
    {IBV_RATE_2_5_GBPS, 2500},   {IBV_RATE_5_GBPS, 5000},       {IBV_RATE_10_GBPS, 10000},
    {IBV_RATE_14_GBPS, 14062},   {IBV_RATE_20_GBPS, 20000},     {IBV_RATE_25_GBPS, 25781},
    {IBV_RATE_28_GBPS, 28125},   {IBV_RATE_30_GBPS, 30000},     {IBV_RATE_40_GBPS, 40000},
    {IBV_RATE_50_GBPS, 53125},   {IBV_RATE_56_GBPS, 56250},     {IBV_RATE_60_GBPS, 60000},
    {IBV_RATE_80_GBPS, 80000},   {IBV_RATE_100_GBPS, 103125},   {IBV_RATE_112_GBPS, 112500},
    {IBV_RATE_120_GBPS, 120000}, {IBV_RATE_168_GBPS, 168750},   {IBV_RATE_200_GBPS, 206250},
    {IBV_RATE_300_GBPS, 309375}, {IBV_RATE_400_GBPS, 425000},   {IBV_RATE_600_GBPS, 637500},
    {IBV_RATE_800_GBPS, 850000}, {IBV_RATE_1200_GBPS, 1275000},
};

// Multiples of the 2.5 Gb/s SDR lane rate (28 and 50 Gb/s rounded down, as rdma-core does); the
// 64b/66b rates of 14, 25, 56, 100, 112, 168, 200 and 300 Gb/s have none.
struct MultRow {
  ibv_rate rate;
  int mult;
};

constexpr MultRow kMults[] = {
    {IBV_RATE_2_5_GBPS, 1},   {IBV_RATE_5_GBPS, 2},     {IBV_RATE_10_GBPS, 4},
    {IBV_RATE_20_GBPS, 8},    {IBV_RATE_30_GBPS, 12},   {IBV_RATE_40_GBPS, 16},
    {IBV_RATE_60_GBPS, 24},   {IBV_RATE_80_GBPS, 32},   {IBV_RATE_120_GBPS, 48},
    {IBV_RATE_28_GBPS, 11},   {IBV_RATE_50_GBPS, 20},   {IBV_RATE_400_GBPS, 160},
    {IBV_RATE_600_GBPS, 240}, {IBV_RATE_800_GBPS, 320}, {IBV_RATE_1200_GBPS, 480},
};

}  // namespace

VROCE_EXPORT int ibv_rate_to_mult(ibv_rate rate) {
  for (const MultRow& row : kMults) {
    if (row.rate == rate) {
      return row.mult;
    }
  }
  return -1;
}

VROCE_EXPORT ibv_rate mult_to_ibv_rate(int mult) {
  for (const MultRow& row : kMults) {
    if (row.mult == mult) {
      return row.rate;
    }
  }
  return IBV_RATE_MAX;
}

VROCE_EXPORT int ibv_rate_to_mbps(ibv_rate rate) {
  for (const RateRow& row : kRates) {
    if (row.rate == rate) {
      return row.mbps;
    }
  }
  return -1;
}

VROCE_EXPORT ibv_rate mbps_to_ibv_rate(int mbps) {
  for (const RateRow& row : kRates) {
    if (row.mbps == mbps) {
      return row.rate;
    }
  }
  return IBV_RATE_MAX;
}
