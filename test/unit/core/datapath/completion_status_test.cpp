// Mapping of completion statuses to NCCL results and operator hints.
#include "core/datapath/completion_status.h"

#include <infiniband/verbs.h>

#include <catch2/catch.hpp>

using roce::completion_status_info;

TEST_CASE("remote and path failures are ncclRemoteError with a hint", "[wc]") {
  for (ibv_wc_status status :
       {IBV_WC_RETRY_EXC_ERR, IBV_WC_REM_ACCESS_ERR, IBV_WC_RNR_RETRY_EXC_ERR,
        IBV_WC_REM_INV_REQ_ERR, IBV_WC_REM_OP_ERR}) {
    auto info = completion_status_info(status);
    CHECK(info.result == ncclRemoteError);
    CHECK_FALSE(info.hint.empty());
  }
}

TEST_CASE("local failures are ncclSystemError", "[wc]") {
  for (int status : {int{IBV_WC_LOC_LEN_ERR}, int{IBV_WC_LOC_PROT_ERR}, int{IBV_WC_WR_FLUSH_ERR},
                     int{IBV_WC_FATAL_ERR}, 1000}) {
    CHECK(completion_status_info(status).result == ncclSystemError);
  }
}

TEST_CASE("the retry-exceeded hint names reachability, PFC/ECN and NCCL_IB_TIMEOUT", "[wc]") {
  auto info = completion_status_info(IBV_WC_RETRY_EXC_ERR);
  CHECK(info.name == "IBV_WC_RETRY_EXC_ERR");
  CHECK(info.hint.find("unreachable") != std::string_view::npos);
  CHECK(info.hint.find("PFC/ECN") != std::string_view::npos);
  CHECK(info.hint.find("NCCL_IB_TIMEOUT") != std::string_view::npos);
  CHECK(completion_status_info(IBV_WC_REM_ACCESS_ERR).hint.find("registration") !=
        std::string_view::npos);
  CHECK(completion_status_info(IBV_WC_SUCCESS).result == ncclSuccess);
}
