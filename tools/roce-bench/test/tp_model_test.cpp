// The per-token arithmetic: presets, the ring floor and the line both roce-bench and
// examples/tp_allreduce.py print (tools/gpu-validate's test pins the same line for Python).
#include "tp_model.h"

#include <catch2/catch.hpp>
#include <string>

using namespace roce::bench;

TEST_CASE("presets carry the published shapes and the article's 160 all-reduces of 256 KiB") {
  const ModelPreset* m = find_model("llama3-70b");
  REQUIRE(m != nullptr);
  CHECK(m->layers == 80);
  CHECK(m->hidden == 8192);
  const TpShape shape{m->layers, m->hidden, 16, DType::F16, 8};
  CHECK(shape.allreduces_per_token() == 160);
  CHECK(shape.allreduce_bytes() == 256 * 1024);
  CHECK(find_model("llama3-8b")->layers == 32);
  CHECK(find_model("llama3-405b")->hidden == 16384);
  CHECK(find_model("mixtral-8x22b")->layers == 56);
  CHECK(find_model("mixtral-8x22b")->hidden == 6144);
  CHECK(find_model("gpt-5") == nullptr);
  CHECK(model_names().find("llama3-405b") != std::string::npos);
}

TEST_CASE("256 KiB takes 5.24 us to serialise at 400 Gb/s") {
  CHECK(wire_time_us(256 * 1024, 400) == Approx(5.24288));
  CHECK(wire_time_us(1'000'000, 8) == Approx(1000.0));
}

TEST_CASE("the ring floor counts 2(n-1) steps of 1/n of the data and one hop latency each") {
  const AllReduceFloor eight = ring_allreduce_floor(256 * 1024, 8, 400, 1.0);
  CHECK(eight.serialisation_us == Approx(14.0 / 8 * 5.24288));
  CHECK(eight.latency_us == Approx(14.0));
  CHECK(eight.total_us() == Approx(23.17504));
  const AllReduceFloor two = ring_allreduce_floor(256 * 1024, 2, 400, 2.0);
  CHECK(two.serialisation_us == Approx(5.24288));
  CHECK(two.latency_us == Approx(4.0));
  const AllReduceFloor four = ring_allreduce_floor(256 * 1024, 4, 400, 1.0);
  CHECK(four.total_us() * 160 == Approx(2218.2912));
}

TEST_CASE("a claim below the floor is named with the reason; one above it is not") {
  const auto article = claim_below_floor(3.0, 256 * 1024, 8, 400, 1.0);
  REQUIRE(article.has_value());
  CHECK(*article ==
        "a claim of 3.00 us per 256 KiB all-reduce over 8 ranks is below the ring floor of "
        "23.18 us at 400 Gb/s (9.18 us to serialise 2(8-1)/8 of the data, 14.00 us for 14 hops "
        "of 1 us); putting the 256 KiB on the wire once already takes 5.24 us");
  const auto tight = claim_below_floor(20.0, 256 * 1024, 8, 400, 1.0);
  REQUIRE(tight.has_value());
  CHECK(tight->find("on the wire once") == std::string::npos);
  CHECK_FALSE(claim_below_floor(30.0, 256 * 1024, 8, 400, 1.0).has_value());
}

TEST_CASE("the per-token line, with and without a compute time") {
  PerTokenFigures f;
  f.model = "Llama 3 70B";
  f.shape = {80, 8192, 16, DType::F16, 4};
  f.token_p50_us = 12340;
  f.token_p99_us = 15000;
  f.allreduce_p50_us = 77.125;
  f.floor_token_us = 2218.2912;
  f.budget_ms = 15;
  CHECK(per_token_line(f) ==
        "per token: Llama 3 70B, TP=4, batch 16, fp16: 160 all-reduces of 256 KiB; "
        "communication p50 12.34 ms, p99 15.00 ms (77.1 us per all-reduce); floor 2.22 ms "
        "(5.6x); 82% of a 15 ms budget");
  f.compute_ms = 10;
  CHECK(per_token_line(f) ==
        "per token: Llama 3 70B, TP=4, batch 16, fp16: 160 all-reduces of 256 KiB; "
        "communication p50 12.34 ms, p99 15.00 ms (77.1 us per all-reduce); floor 2.22 ms "
        "(5.6x); 82% of a 15 ms budget; with 10 ms of compute: 22.34 ms per token, over the "
        "budget by 7.34 ms");
  f.compute_ms = 1.5;
  CHECK(
      per_token_line(f).ends_with("with 1.5 ms of compute: 13.84 ms per token, within the "
                                  "budget, 1.16 ms to spare"));
}

TEST_CASE("an explicit shape is named by its numbers unless it is a preset's") {
  CHECK(model_display("llama3-70b", 80, 8192) == "Llama 3 70B");
  CHECK(model_display("llama3-70b", 40, 8192) == "custom (40 layers, hidden 8192)");
  CHECK(model_display("", 12, 768) == "custom (12 layers, hidden 768)");
  CHECK(human_bytes(96) == "96 B");
  CHECK(human_bytes(256 * 1024) == "256 KiB");
  CHECK(human_bytes(1536 * 1024) == "1.50 MiB");
}
