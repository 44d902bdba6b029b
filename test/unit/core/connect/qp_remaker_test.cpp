// Whether a comm's recovery epochs run, and why not: the one line an operator reads when a
// failure was not recovered.
#include "core/connect/qp_remaker.h"

#include <catch2/catch.hpp>
#include <string>

#include "net/handshake.h"

using roce::ConnectionSettings;
using roce::kFirstRecoveryVersion;
using roce::make_recovery_setup;
using roce::QpRemakerLinks;

TEST_CASE("recovery epochs run only with the setting, the peer watch and a peer that speaks them",
          "[unit][epoch]") {
  ConnectionSettings settings;
  settings.recovery_timeout_s = 42;
  const uint32_t ours = roce::net::plugin_version_code();
  REQUIRE(ours >= kFirstRecoveryVersion);  // this build speaks them

  const auto on = make_recovery_setup(settings, ours, true, 7, QpRemakerLinks{});
  CHECK(on.enabled);
  CHECK(on.off_reason.empty());
  CHECK(on.timeout_s == 42);
  CHECK(on.nonce == 7);
  CHECK(on.remaker.create);
  CHECK(on.remaker.connect);

  settings.failover = false;
  const auto off = make_recovery_setup(settings, ours, true, 7, QpRemakerLinks{});
  CHECK_FALSE(off.enabled);
  CHECK(off.off_reason == "NCCL_ROCE_FAILOVER=0");
  settings.failover = true;

  const auto unwatched = make_recovery_setup(settings, ours, false, 7, QpRemakerLinks{});
  CHECK_FALSE(unwatched.enabled);
  CHECK(unwatched.off_reason.find("NCCL_ROCE_PEER_WATCH=0") != std::string::npos);

  const auto older = make_recovery_setup(settings, 0x000100, true, 7, QpRemakerLinks{});
  CHECK_FALSE(older.enabled);
  CHECK(older.off_reason.find("0.1.0") != std::string::npos);
  CHECK(older.off_reason.find("0.2.0") != std::string::npos);
}
