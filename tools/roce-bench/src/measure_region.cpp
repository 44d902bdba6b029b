// Callgrind client requests around the timed regions.
#include "measure_region.h"

#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define ROCE_BENCH_HAVE_CALLGRIND 1
#endif

namespace roce::bench {

void region_begin() {
#ifdef ROCE_BENCH_HAVE_CALLGRIND
  CALLGRIND_ZERO_STATS;
#endif
}

void region_end(const char* name) {
#ifdef ROCE_BENCH_HAVE_CALLGRIND
  CALLGRIND_DUMP_STATS_AT(name);
#else
  (void)name;
#endif
}

}  // namespace roce::bench
