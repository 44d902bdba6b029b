// The hook through which a test executable prepares its process before Catch2 runs any test.
// Defined by at most one translation unit of an executable; catch_main.cpp calls it when defined.
#pragma once

extern "C" void roce_test_environment();
