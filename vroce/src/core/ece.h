// Enhanced Connection Establishment (ibv_query_ece / ibv_set_ece, IBVERBS_1.10) with mlx5's
// semantics as far as a peer can see them: ECE is a Mellanox vendor negotiation (vendor id
// 0x15b3, comp_mask 0); ibv_query_ece on a fresh QP gives the options the device supports; the
// responder sets the requester's options before RTR, and from RTR on its query gives them reduced
// to what both support, which the requester then sets on its own QP before RTR. Options set on a
// QP that has reached RTR are refused (they are applied at RTR). VROCE_ECE chooses the supported
// options, or off for a device without ECE (both calls answer EOPNOTSUPP).
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>

namespace vroce::core {

inline constexpr uint32_t kEceVendorMellanox = 0x15b3;  // PCI_VENDOR_ID_MELLANOX

int query_ece(ibv_qp* ibv, ibv_ece* ece);
int set_ece(ibv_qp* ibv, ibv_ece* ece);

}  // namespace vroce::core
