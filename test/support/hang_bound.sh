# shellcheck shell=bash
# The hang bound of the shell tests, as test/support/hang_bound.h gives the C++ ones: how long a
# test waits for something that must happen before it calls it a hang. A bound for a hang, never
# a timing check: a loaded 2-core machine was seen taking over 30 s for what takes 0.1 s alone.
# roce_hang_polls: how many 0.1 s polls make the bound (each poll sleeps at least 0.1 s).
# shellcheck disable=SC2034  # used by the scripts that source this file
ROCE_HANG_BOUND_S=100
# shellcheck disable=SC2034
roce_hang_polls=$((ROCE_HANG_BOUND_S * 10))
