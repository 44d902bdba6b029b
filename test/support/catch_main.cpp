// The one main() of the Catch2 test executables (see CMakeLists.txt for why there is only one).
// An executable whose tests need process-wide set-up before any test runs (environment variables
// read once by a library, such as VROCE_DEVICES) defines roce_test_environment(); main() calls it
// first. Executables without set-up define nothing: the weak reference stays null.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

// Weak: executables without set-up leave it undefined (null). See test_environment.h.
extern "C" __attribute__((weak)) void roce_test_environment();

int main(int argc, char* argv[]) {
  if (roce_test_environment != nullptr) {
    roce_test_environment();
  }
  return Catch::Session().run(argc, argv);
}
