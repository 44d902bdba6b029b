// The one main() of the Catch2 test executables (see CMakeLists.txt for why there is only one).
// An executable whose tests need process-wide set-up before any test runs (environment variables
// read once by a library, such as VROCE_DEVICES) defines roce_test_environment(); main() calls it
// first. Executables without set-up define nothing: the weak reference stays null.
//
// An executable that links the backend switch (test_backend.h) fails at once when the backend's
// settings are wrong (one line saying what to set), and may name a tag to leave out
// (roce_test_excluded_tag(): "[vroce]" when the suite runs on real NICs). Its tests are left out
// of the run; a run whose every selected test carries the tag (ctest runs one test per process)
// exits 77, which ctest reports as skipped, with one line saying why.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

// Weak: executables without set-up leave it undefined (null). See test_environment.h.
extern "C" __attribute__((weak)) void roce_test_environment();
// Weak: defined by test_backend.cpp where an executable uses it. See test_backend.h.
extern "C" __attribute__((weak)) const char* roce_test_backend_error();
extern "C" __attribute__((weak)) const char* roce_test_excluded_tag();

namespace {

constexpr int kSkipped = 77;  // ctest's SKIP_RETURN_CODE

// A test name as a Catch2 filter that matches that name only.
std::string exact_filter(const std::string& name) {
  std::string filter;
  for (const char c : name) {
    if (c == '\\' || c == ',' || c == '[' || c == ']' || c == '~' || c == '*' || c == '"') {
      filter += '\\';
    }
    filter += c;
  }
  return filter;
}

// Leaves the tests tagged `excluded` out of the session's selection; returns false when that
// leaves nothing of a selection that was not empty.
bool leave_out(Catch::Session& session, const std::string& excluded) {
  auto& config = session.config();
  const auto selected =
      Catch::filterTests(Catch::getAllTestCasesSorted(config), config.testSpec(), config);
  std::vector<std::string> kept;
  for (const auto& test : selected) {
    if (test.tagsAsString().find(excluded) == std::string::npos) {
      kept.push_back(exact_filter(test.name));
    }
  }
  if (kept.size() == selected.size()) {
    return true;
  }
  if (kept.empty()) {
    return false;
  }
  session.configData().testsOrTags = kept;
  session.useConfigData(session.configData());
  return true;
}

}  // namespace

int main(int argc, char* argv[]) {
  if (roce_test_environment != nullptr) {
    roce_test_environment();
  }
  Catch::Session session;
  if (const int rc = session.applyCommandLine(argc, argv); rc != 0) {
    return rc;
  }
  const bool listing = session.configData().listTests || session.configData().listTestNamesOnly ||
                       session.configData().listTags;
  if (const char* error = roce_test_backend_error != nullptr ? roce_test_backend_error() : nullptr;
      error != nullptr && !listing) {
    std::fprintf(stderr, "%s\n", error);
    return 1;
  }
  const char* excluded = roce_test_excluded_tag != nullptr ? roce_test_excluded_tag() : nullptr;
  if (excluded != nullptr && !listing && !leave_out(session, excluded)) {
    std::printf(
        "SKIPPED: every selected test is tagged %s, which this backend cannot run "
        "(ROCE_TEST_BACKEND=%s; see test/support/test_backend.h)\n",
        excluded, std::getenv("ROCE_TEST_BACKEND"));
    return kSkipped;
  }
  return session.run();
}
