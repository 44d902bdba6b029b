// How long a test waits for something that must happen (a child's line, a connection, a
// completion, an event, an error) before it calls it a hang: one bound for every suite. A bound
// for a hang, never a timing check: a loaded 2-core machine (load 8 and more) was seen taking
// over 30 s for what takes a tenth of a second alone, so this stays far above that and below the
// ctest timeouts (120 s and more). What a test checks is never how long something took.
#pragma once

#include <chrono>

namespace roce::test {

inline constexpr int kHangBoundMs = 100000;
inline constexpr std::chrono::milliseconds kHangBound{kHangBoundMs};

}  // namespace roce::test
