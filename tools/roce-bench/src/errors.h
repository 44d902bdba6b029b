// roce-bench's two error kinds. Every message is one line that names what failed, the cause and,
// where one is known, the fix; main() prints it and picks the exit status from the kind.
#pragma once

#include <stdexcept>
#include <string>

namespace roce::bench {

// Bad command line or environment: exit status 2, printed with a pointer to --help.
class UsageError : public std::runtime_error {
 public:
  explicit UsageError(const std::string& what) : std::runtime_error(what) {}
};

// Anything that goes wrong while running: plugin or verbs errors, lost ranks, wrong data.
// Exit status 1.
class BenchError : public std::runtime_error {
 public:
  explicit BenchError(const std::string& what) : std::runtime_error(what) {}
};

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

}  // namespace roce::bench
