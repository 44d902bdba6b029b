// Marks roce-bench's timed regions for callgrind (scripts/bench-callgrind.sh): the statistics are
// zeroed when a region begins and dumped (named) when it ends, so a dump holds exactly the timed
// messages, without connection setup, warm-up or verification. Valgrind's client requests are a
// few no-op instructions outside valgrind; built without valgrind's header they compile away.
#pragma once

namespace roce::bench {

void region_begin();
void region_end(const char* name);

}  // namespace roce::bench
