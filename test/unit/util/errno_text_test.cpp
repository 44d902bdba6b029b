// The plugin's one errno formatter (util/errno_text.h): the symbolic name first, then libc's
// description; a value libc does not know still prints as a number. The verbs layer's
// verbs::errno_text is the same function, so every log line prints an errno one way.
#include "util/errno_text.h"

#include <catch2/catch.hpp>
#include <cerrno>

#include "verbs/error.h"

TEST_CASE("errno text names the errno first, then libc's description", "[errno]") {
  CHECK(roce::errno_text(ECONNREFUSED) == "ECONNREFUSED (Connection refused)");
  CHECK(roce::errno_text(EINVAL) == "EINVAL (Invalid argument)");
  CHECK(roce::errno_text(123456) == "errno 123456");
  CHECK(roce::verbs::errno_text(EMFILE) == roce::errno_text(EMFILE));
}
