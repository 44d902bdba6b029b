// Command-line parsing: defaults, every validation rule, byte-size suffixes.
#include "options.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "errors.h"

using roce::bench::Api;
using roce::bench::Mode;
using roce::bench::Options;
using roce::bench::parse_bytes;
using roce::bench::parse_options;
using roce::bench::Path;
using roce::bench::UsageError;

namespace {

Options parse(std::vector<std::string> args) {
  return parse_options(args);
}

std::string error_of(std::vector<std::string> args) {
  try {
    parse_options(args);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("defaults follow the issue: all-reduce, v8, plugin, 8 B to 64 MiB, 2 ranks") {
  const Options o = parse({});
  CHECK(o.mode == Mode::AllReduce);
  CHECK(o.api == Api::V8);
  CHECK(o.path == Path::Plugin);
  CHECK(o.nranks == 2);
  CHECK(o.min_bytes == 8);
  CHECK(o.max_bytes == 64u << 20);
  CHECK(o.window == 8);
  CHECK_FALSE(o.rank.has_value());
}

TEST_CASE("pingpong defaults to 1 MiB as the largest size") {
  CHECK(parse({"--mode", "pingpong"}).max_bytes == 1u << 20);
  CHECK(parse({"-m", "bw"}).max_bytes == 64u << 20);
}

TEST_CASE("every option reads its value, in both --x v and --x=v forms") {
  const Options o = parse({"--mode=bibw",
                           "--api",
                           "v11",
                           "--compare-raw",
                           "-b",
                           "4K",
                           "--maxbytes=1M",
                           "-f",
                           "4",
                           "-n",
                           "7",
                           "-w",
                           "0",
                           "--window",
                           "32",
                           "--tc",
                           "106",
                           "--dev",
                           "1",
                           "--hca",
                           "=vroce1",
                           "--gid-index",
                           "3",
                           "--timeout",
                           "2.5",
                           "--json=out.json",
                           "--flush",
                           "always",
                           "--dmabuf",
                           "off"});
  CHECK(o.mode == Mode::BiBandwidth);
  CHECK(o.api == Api::V11);
  CHECK(o.path == Path::Both);
  CHECK(o.min_bytes == 4096);
  CHECK(o.max_bytes == 1u << 20);
  CHECK(o.step_factor == 4);
  CHECK(o.iters == 7);
  CHECK(o.warmup == 0);
  CHECK(o.window == 32);
  CHECK(o.traffic_class == 106);
  CHECK(o.dev == 1);
  CHECK(o.hca == "=vroce1");
  CHECK(o.gid_index == 3);
  CHECK(o.timeout_s == Approx(2.5));
  CHECK(o.json_file == "out.json");
  CHECK_FALSE(o.json_stdout);
}

TEST_CASE("cluster mode needs --nranks and a rendezvous with a real port") {
  const Options o = parse({"--rank", "1", "--nranks", "2", "--rendezvous", "10.0.0.1:29500"});
  CHECK(o.rank == 1);
  CHECK(error_of({"--rank", "1"}).find("--nranks") != std::string::npos);
  CHECK(error_of({"--rank", "1", "--nranks", "2"}).find("--rendezvous") != std::string::npos);
  CHECK(error_of({"--rank", "2", "--nranks", "2", "--rendezvous", "h:1"}).find("not below") !=
        std::string::npos);
  CHECK(error_of({"--rank", "0", "--nranks", "2", "--rendezvous", "h:0"}).find("port") !=
        std::string::npos);
  CHECK(error_of({"--rendezvous", "nohost"}).find("host:port") != std::string::npos);
}

TEST_CASE("argument errors name the option, the value and what is accepted") {
  CHECK(error_of({"--api", "v13"}).find("--api v13") != std::string::npos);
  CHECK(error_of({"--api", "v5"}).find("expected v6, v7, v8, v9, v10, v11 or v12") !=
        std::string::npos);
  CHECK(parse({"--api", "v6"}).api == Api::V6);
  CHECK(parse({"--api", "12"}).api == Api::V12);
  CHECK(error_of({"--mode", "alltoall"}).find("pingpong, bw, bibw, allreduce or tp") !=
        std::string::npos);
  CHECK(error_of({"-b", "1M", "-e", "8"}).find("larger than -e") != std::string::npos);
  CHECK(error_of({"-b", "2"}).find("one float") != std::string::npos);
  CHECK(error_of({"-e", "2G"}).find("at most 1G") != std::string::npos);
  CHECK(error_of({"-b", "eight"}).find("byte count") != std::string::npos);
  CHECK(error_of({"--window", "33"}).find("1..32") != std::string::npos);
  CHECK(error_of({"--nranks", "1"}).find("2..64") != std::string::npos);
  CHECK(error_of({"-f", "1"}).find("2..1024") != std::string::npos);
  CHECK(error_of({"--slice", "6"}).find("multiple of 4") != std::string::npos);
  CHECK(error_of({"--raw"}).find("plugin only") != std::string::npos);
  CHECK(error_of({"--mode", "bw", "--nranks", "3"}).find("exactly 2 ranks") != std::string::npos);
  CHECK(error_of({"--init-check", "--raw", "-m", "bw"}).find("--init-check") != std::string::npos);
  CHECK(error_of({"--timeout", "0"}).find("--timeout") != std::string::npos);
  CHECK(error_of({"--tc", "256"}).find("-1..255") != std::string::npos);
  CHECK(error_of({"--flush", "sometimes"}).find("auto, always or never") != std::string::npos);
  CHECK(error_of({"--bogus"}).find("unknown option '--bogus'") != std::string::npos);
  CHECK(error_of({"--window"}).find("needs a value") != std::string::npos);
  CHECK(error_of({"--raw=1"}).find("takes no value") != std::string::npos);
  CHECK(error_of({"--json="}).find("file name") != std::string::npos);
}

TEST_CASE("byte sizes take binary K, M, G suffixes and reject anything else") {
  CHECK(parse_bytes("8") == 8u);
  CHECK(parse_bytes("64K") == 65536u);
  CHECK(parse_bytes("4m") == 4u << 20);
  CHECK(parse_bytes("1G") == 1u << 30);
  CHECK_FALSE(parse_bytes(""));
  CHECK_FALSE(parse_bytes("K"));
  CHECK_FALSE(parse_bytes("4KB"));
  CHECK_FALSE(parse_bytes("-4"));
  CHECK_FALSE(parse_bytes("99999999999999999999G"));
}

TEST_CASE("the fingerprint changes with shared options but not with paths or the rank") {
  const auto a = roce::bench::options_fingerprint(parse({"-n", "5"}));
  CHECK(a == roce::bench::options_fingerprint(parse({"-n", "5", "--plugin", "/x.so"})));
  CHECK(a == roce::bench::options_fingerprint(
                 parse({"-n", "5", "--rank", "1", "--nranks", "2", "--rendezvous", "h:1"})));
  CHECK(a != roce::bench::options_fingerprint(parse({"-n", "6"})));
  CHECK(a != roce::bench::options_fingerprint(parse({"-n", "5", "--api", "v9"})));
}

TEST_CASE("the raw path runs the clear-to-send protocol with --raw-cts, only on that path") {
  CHECK_FALSE(parse({"-m", "pingpong", "--raw"}).raw_cts);
  CHECK(parse({"-m", "pingpong", "--raw", "--raw-cts"}).raw_cts);
  CHECK(parse({"-m", "bw", "--raw-cts", "--compare-raw"}).raw_cts);
  CHECK(error_of({"-m", "pingpong", "--raw-cts"}) ==
        "--raw-cts changes the raw-verbs path; add --raw or --compare-raw");
  CHECK(error_of({"-m", "pingpong", "--raw", "--raw-cts=1"}).find("takes no value") !=
        std::string::npos);
  // Both ranks of a cluster-mode run must agree on the protocol.
  CHECK(roce::bench::options_fingerprint(parse({"-m", "bw", "--raw"})) !=
        roce::bench::options_fingerprint(parse({"-m", "bw", "--raw", "--raw-cts"})));
}

TEST_CASE("tp mode: Llama 3 70B at batch 16 in fp16 by default, 256 KiB per all-reduce") {
  const Options o = parse({"-m", "tp", "--tp", "4"});
  CHECK(o.mode == Mode::Tp);
  CHECK(o.nranks == 4);
  CHECK(o.model == "llama3-70b");
  CHECK(o.layers == 80);
  CHECK(o.hidden == 8192);
  CHECK(o.batch == 16);
  CHECK(o.dtype == roce::bench::DType::F16);
  CHECK(o.max_bytes == 256u << 10);
  CHECK(o.min_bytes == 256u << 10);
  CHECK(o.steps == 10);
  CHECK(o.budget_ms == 15);
  CHECK_FALSE(o.compute_ms.has_value());
}

TEST_CASE("tp mode takes presets, explicit shapes and what to compare with") {
  const Options big =
      parse({"-m",           "tp",   "--model",     "llama3-405b", "--batch",          "1",
             "--dtype",      "bf16", "--steps",     "3",           "--budget-ms",      "20",
             "--compute-ms", "12.5", "--link-gbps", "200",         "--nic-latency-us", "2",
             "--claim-us",   "3"});
  CHECK(big.layers == 126);
  CHECK(big.max_bytes == 16384u * 2);
  CHECK(big.dtype == roce::bench::DType::BF16);
  CHECK(big.compute_ms == 12.5);
  CHECK(big.link_gbps == 200);
  CHECK(big.claim_us == 3);
  const Options custom = parse({"-m", "tp", "--layers", "2", "--hidden", "1024", "--batch", "4"});
  CHECK(custom.model.empty());
  CHECK(custom.max_bytes == 4u * 1024 * 2);
  const Options override = parse({"-m", "tp", "--model", "llama3-8b", "--layers", "4"});
  CHECK(override.layers == 4);
  CHECK(override.hidden == 4096);
  CHECK(parse({"--dtype", "fp16"}).dtype == roce::bench::DType::F16);  // allreduce takes it too
}

TEST_CASE("tp mode's argument errors say what to do instead") {
  CHECK(error_of({"-m", "tp", "--model", "llama9"}).find("expected one of llama3-8b") !=
        std::string::npos);
  CHECK(error_of({"-m", "tp", "--layers", "4"}) ==
        "--mode tp without --model needs both --layers and --hidden");
  CHECK(error_of({"-m", "tp", "-e", "1M"}).find("-b/-e do not apply to --mode tp") !=
        std::string::npos);
  CHECK(error_of({"-m", "tp", "--compare-raw"}).find("through the plugin only") !=
        std::string::npos);
  CHECK(error_of({"-m", "pingpong", "--dtype", "fp16"}).find("--dtype applies to") !=
        std::string::npos);
  CHECK(error_of({"--dtype", "fp8"}) == "--dtype fp8: expected fp16, bf16 or fp32");
  CHECK(error_of({"-m", "tp", "--budget-ms", "0"}) ==
        "--budget-ms 0: expected a number in [0.001, 1000000]");
  CHECK(error_of({"-m", "tp", "--batch", "65536", "--hidden", "1048576", "--layers", "1"})
            .find("at most 1G") != std::string::npos);
}

TEST_CASE("vdevice: --vdevice takes 2 to 8 distinct devices and needs a table with makeVDevice") {
  const Options o = parse({"-m", "bw", "--api", "v11", "--vdevice", "0,1"});
  CHECK(o.vdevice == std::vector<int>{0, 1});
  CHECK(parse({"--api=v12", "--vdevice=3,0,1,2,4,5,6,7"}).vdevice.size() == 8);
  CHECK(parse({"--api", "v9", "--vdevice", "1,0,2,3"}).vdevice == std::vector<int>{1, 0, 2, 3});
  CHECK(parse({}).vdevice.empty());

  CHECK(error_of({"--vdevice", "0,1"})
            .find("--vdevice 0,1: --api v8 has no makeVDevice (ncclNet v9 and later have it); add "
                  "--api v9") != std::string::npos);
  CHECK(error_of({"--api", "v6", "--vdevice", "0,1"}).find("--api v6 has no makeVDevice") !=
        std::string::npos);
  CHECK(error_of({"--api", "v11", "--vdevice", "0,1,2,3,4"})
            .find("5 members, but the v11 table's makeVDevice takes at most 4") !=
        std::string::npos);
  CHECK(error_of({"--api", "v11", "--vdevice", "0"}).find("1 member(s): expected 2 to 8") !=
        std::string::npos);
  CHECK(error_of({"--api", "v12", "--vdevice", "0,1,2,3,4,5,6,7,8"})
            .find("9 member(s): expected 2 to 8") != std::string::npos);
  CHECK(error_of({"--api", "v11", "--vdevice", "0,0"}).find("device 0 is named twice") !=
        std::string::npos);
  for (const char* bad : {"0,", ",1", "0;1", "a,b", "-1,0", "0,1024", ""}) {
    INFO(bad);
    CHECK(error_of({"--api", "v11", "--vdevice", bad}).find("expected 2 to 8 distinct") !=
          std::string::npos);
  }
  CHECK(error_of({"--api", "v11", "--vdevice", "0,1", "--dev", "1"}).find("drop --dev") !=
        std::string::npos);
  CHECK(error_of({"-m", "bw", "--api", "v11", "--vdevice", "0,1", "--raw"})
            .find("--raw and --compare-raw run on one verbs device") != std::string::npos);
  CHECK(error_of({"--api", "v11", "--vdevice", "0,1", "--init-check"}).find("--init-check") !=
        std::string::npos);
}

TEST_CASE("the fingerprint holds --vdevice's member count, not the indexes") {
  using roce::bench::options_fingerprint;
  const auto plain = options_fingerprint(parse({"--api", "v11"}));
  const auto two = options_fingerprint(parse({"--api", "v11", "--vdevice", "0,1"}));
  CHECK(plain != two);
  CHECK(two == options_fingerprint(parse({"--api", "v11", "--vdevice", "2,3"})));
  CHECK(two != options_fingerprint(parse({"--api", "v11", "--vdevice", "0,1,2"})));
}
