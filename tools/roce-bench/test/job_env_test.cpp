// The job's rank and size from torchrun's, Open MPI's or Slurm's environment: precedence, partly
// set launchers, the rendezvous from MASTER_ADDR/MASTER_PORT, and how --nranks/--rendezvous and
// the mode combine with it.
#include "job_env.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "errors.h"
#include "options.h"
#include "result_checks.h"

using namespace roce::bench;
using roce::test::failure_of;
using roce::test::value_of;

namespace {

constexpr int kMax = 64;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

Options parse(std::vector<std::string> args) {
  return parse_options(args);
}

std::string with_job_error(const Options& o, const JobEnv& job) {
  try {
    with_job(o, job);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("no launcher's variables: no job") {
  CHECK_FALSE(value_of(job_from_environment({}, kMax)).has_value());
  CHECK_FALSE(value_of(job_from_environment({{"HOME", "/root"}, {"LOCAL_RANK", "1"}}, kMax)));
}

TEST_CASE("torchrun: RANK/WORLD_SIZE, rank 0 on MASTER_PORT + 1") {
  const auto job = value_of(job_from_environment(
      {{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"MASTER_ADDR", "10.0.0.1"}, {"MASTER_PORT", "29500"}},
      kMax));
  REQUIRE(job);
  CHECK(job->rank == 3);
  CHECK(job->size == 4);
  CHECK(job->rendezvous == "10.0.0.1:29501");
  CHECK(job->source == "torchrun (RANK/WORLD_SIZE)");
}

TEST_CASE("Open MPI and Slurm: their own variables, MASTER_PORT as it is") {
  auto job = value_of(job_from_environment({{"OMPI_COMM_WORLD_RANK", "1"},
                                            {"OMPI_COMM_WORLD_SIZE", "2"},
                                            {"MASTER_ADDR", "fe80::1"},
                                            {"MASTER_PORT", "4000"}},
                                           kMax));
  REQUIRE(job);
  CHECK(job->rank == 1);
  CHECK(job->rendezvous == "[fe80::1]:4000");
  CHECK(contains(job->source, "Open MPI"));
  job = value_of(job_from_environment({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "8"}}, kMax));
  REQUIRE(job);
  CHECK(job->size == 8);
  CHECK(job->rendezvous.empty());
  CHECK(job->source == "Slurm (SLURM_PROCID/SLURM_NTASKS)");
}

TEST_CASE("the innermost launcher wins: torchrun, then Open MPI, then Slurm") {
  // mpirun inside a Slurm allocation: every process has SLURM_PROCID=0.
  auto job = value_of(job_from_environment({{"SLURM_PROCID", "0"},
                                            {"SLURM_NTASKS", "1"},
                                            {"OMPI_COMM_WORLD_RANK", "1"},
                                            {"OMPI_COMM_WORLD_SIZE", "2"}},
                                           kMax));
  REQUIRE(job);
  CHECK(job->rank == 1);
  job = value_of(job_from_environment({{"OMPI_COMM_WORLD_RANK", "0"},
                                       {"OMPI_COMM_WORLD_SIZE", "2"},
                                       {"RANK", "5"},
                                       {"WORLD_SIZE", "6"}},
                                      kMax));
  REQUIRE(job);
  CHECK(job->rank == 5);
}

TEST_CASE("a launcher's variables only partly set are an error naming the missing one") {
  auto e = failure_of(job_from_environment({{"RANK", "0"}}, kMax));
  CHECK(contains(e, "RANK is set but WORLD_SIZE is not"));
  e = failure_of(job_from_environment({{"WORLD_SIZE", "2"}}, kMax));
  CHECK(contains(e, "WORLD_SIZE is set but RANK is not"));
  e = failure_of(job_from_environment({{"SLURM_PROCID", "1"}}, kMax));
  CHECK(contains(e, "SLURM_NTASKS is not"));
  e = failure_of(job_from_environment({{"OMPI_COMM_WORLD_SIZE", "2"}}, kMax));
  CHECK(contains(e, "OMPI_COMM_WORLD_RANK is not"));
  e = failure_of(job_from_environment(
      {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "10.0.0.1"}}, kMax));
  CHECK(contains(e, "MASTER_ADDR is set but MASTER_PORT is not"));
  e = failure_of(
      job_from_environment({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "1"}}, kMax));
  CHECK(contains(e, "MASTER_PORT is set but MASTER_ADDR is not"));
}

TEST_CASE("bad rank, size and port values are named") {
  CHECK(contains(failure_of(job_from_environment({{"RANK", "2"}, {"WORLD_SIZE", "2"}}, kMax)),
                 "RANK='2': expected a rank below WORLD_SIZE=2"));
  CHECK(contains(failure_of(job_from_environment({{"RANK", "x"}, {"WORLD_SIZE", "2"}}, kMax)),
                 "RANK='x'"));
  CHECK(contains(failure_of(job_from_environment({{"RANK", "0"}, {"WORLD_SIZE", "65"}}, kMax)),
                 "WORLD_SIZE='65': expected a job size in 1..64"));
  CHECK(contains(
      failure_of(job_from_environment(
          {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "65535"}},
          kMax)),
      "MASTER_PORT='65535' is not a port number in 1..65534"));
}

TEST_CASE("a job of size 1 is no job: the ranks start here") {
  CHECK_FALSE(value_of(job_from_environment({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}}, kMax)));
}

TEST_CASE("with_job: the job's rank and size, --rendezvous before MASTER_ADDR") {
  const JobEnv job{1, 2, "10.0.0.1:29501", "torchrun (RANK/WORLD_SIZE)"};
  Options o = with_job(parse({"-m", "pingpong"}), job);
  CHECK(o.rank == 1);
  CHECK(o.nranks == 2);
  CHECK(o.rendezvous == "10.0.0.1:29501");
  CHECK(o.job_source == job.source);
  o = with_job(parse({"-m", "pingpong", "--rendezvous", "10.9.9.9:7000"}), job);
  CHECK(o.rendezvous == "10.9.9.9:7000");
  o = with_job(parse({"--nranks", "2"}), job);
  CHECK(o.rank == 1);
}

TEST_CASE("with_job: conflicts with the command line and the mode are usage errors") {
  const JobEnv four{0, 4, "10.0.0.1:29501", "Slurm (SLURM_PROCID/SLURM_NTASKS)"};
  CHECK(contains(with_job_error(parse({"--nranks", "2"}), four),
                 "--nranks 2 disagrees with the job size 4 from Slurm"));
  CHECK(contains(with_job_error(parse({"-m", "bw"}), four), "runs between exactly 2 ranks"));
  const JobEnv no_address{0, 2, "", "Open MPI (OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE)"};
  CHECK(contains(with_job_error(parse({}), no_address),
                 "pass --rendezvous HOST:PORT, or set MASTER_ADDR and MASTER_PORT"));
  CHECK(contains(with_job_error(parse({"--rendezvous", "h:0"}), no_address),
                 "the port must be in 1..65535"));
}
