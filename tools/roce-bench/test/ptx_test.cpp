// The GPU reduction kernel is PTX that the driver compiles at run time; no GPU here, but the
// toolkit's ptxas (when installed) assembles it offline for the architectures NCCL users run.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "cuda_driver.h"

TEST_CASE("the reduction PTX assembles for Turing to Hopper") {
#ifndef ROCE_BENCH_PTXAS
  WARN("ptxas not found at configure time (no CUDA toolkit): PTX not assembled");
  return;
#else
  const std::string path = "/tmp/roce-bench-ptx-test-" + std::to_string(getpid()) + ".ptx";
  {
    std::ofstream out(path);
    out << roce::bench::reduction_ptx();
  }
  for (const char* arch : {"sm_75", "sm_80", "sm_90"}) {
    const std::string cubin = path + "." + arch + ".cubin";
    const std::string command = std::string(ROCE_BENCH_PTXAS) + " --gpu-name " + arch + " " + path +
                                " -o " + cubin + " 2>&1";
    INFO(command);
    CHECK(std::system(command.c_str()) == 0);
    std::remove(cubin.c_str());
  }
  std::remove(path.c_str());
#endif
}
