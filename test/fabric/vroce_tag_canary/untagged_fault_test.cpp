// Never compiled: the input of the canary test vroce_tag_check_detects_an_untagged_test
// (test/fabric/CMakeLists.txt), a test that sets a vroce fault switch without the [vroce] tag.
#include <catch2/catch.hpp>
#include <cstdlib>

TEST_CASE("a fault run that forgot its tag", "[hardening][faults]") {
  setenv("VROCE_FAULTS", "drop=0.01", 1);
  CHECK(true);
}
