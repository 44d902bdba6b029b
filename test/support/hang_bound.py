"""The hang bound of the Python tests, as test/support/hang_bound.h gives the C++ ones: how long a
test waits for something that must happen (a program's exit, a line, a file) before it calls it a
hang. A bound for a hang, never a timing check: a loaded 2-core machine was seen taking over 30 s
for what takes a tenth of a second alone."""

HANG_BOUND_S = 100
