// Catch2 main for roce-bench's unit tests.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
