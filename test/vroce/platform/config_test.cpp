// The VROCE_* parsers: every accepted form and every rejection, with the message naming the
// variable, the value and what is accepted.
#include <catch2/catch.hpp>
#include <map>

#include "config/parsers.h"
#include "result_checks.h"

using roce::test::failure_of;
using vroce::Config;
using vroce::DeviceSpec;
using vroce::FaultSpec;

namespace {

Config parse(const std::map<std::string, std::string>& env, std::vector<std::string>* errors) {
  return vroce::parse_config(
      [&](const char* name) -> std::optional<std::string> {
        auto it = env.find(name);
        if (it == env.end()) {
          return std::nullopt;
        }
        return it->second;
      },
      errors);
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("device specs: names bound to addresses or netdevs", "[config]") {
  auto specs = vroce::parse_device_specs("vroce0=127.0.0.11, vroce1=veth0 ,v_2=fd00::1");
  REQUIRE(specs);
  REQUIRE(specs->size() == 3);
  CHECK((*specs)[0].name == "vroce0");
  CHECK((*specs)[0].address_or_netdev == "127.0.0.11");
  CHECK((*specs)[1].name == "vroce1");
  CHECK((*specs)[1].address_or_netdev == "veth0");
  CHECK((*specs)[2].address_or_netdev == "fd00::1");

  auto none = vroce::parse_device_specs("");
  REQUIRE(none);
  CHECK(none->empty());
}

TEST_CASE("device specs: malformed lists are rejected with the reason", "[config]") {
  struct Case {
    const char* text;
    const char* reason;
  };
  const Case cases[] = {
      {"vroce0", "is not <name>=<address or netdev>"},
      {"vroce0=127.0.0.11,", "is not <name>=<address or netdev>"},
      {"=127.0.0.1", "must start with a letter"},
      {"0dev=127.0.0.1", "must start with a letter"},
      {"dev/x=127.0.0.1", "must start with a letter"},
      {"dev=", "neither an IPv4/IPv6 address nor a netdev name"},
      {"dev=a b", "neither an IPv4/IPv6 address nor a netdev name"},
      {"a=127.0.0.1,a=127.0.0.2", "appears twice"},
      {"a=127.0.0.1,b=127.0.0.1", "bound to two devices"},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    const std::string error = failure_of(vroce::parse_device_specs(c.text));
    CHECK(contains(error, c.reason));
  }
}

TEST_CASE("default devices: vroce0..7 on 127.0.0.11..18", "[config]") {
  std::vector<DeviceSpec> specs = vroce::default_device_specs();
  REQUIRE(specs.size() == 8);
  CHECK(specs.front().name == "vroce0");
  CHECK(specs.front().address_or_netdev == "127.0.0.11");
  CHECK(specs.back().name == "vroce7");
  CHECK(specs.back().address_or_netdev == "127.0.0.18");
}

TEST_CASE("fault spec: every key", "[config]") {
  auto spec = vroce::parse_fault_spec(
      "drop=0.01,every=7,psn=5:9:16777215,dup=0.5,corrupt=1,reorder=0,ecn=0.25,delay_us=250,"
      "seed=42");
  REQUIRE(spec);
  CHECK(spec->drop_probability == Approx(0.01));
  CHECK(spec->drop_every == 7);
  CHECK(spec->drop_psns == std::vector<uint32_t>{5, 9, 16777215});
  CHECK(spec->duplicate_probability == Approx(0.5));
  CHECK(spec->corrupt_probability == Approx(1.0));
  CHECK(spec->reorder_probability == Approx(0.0));
  CHECK(spec->ecn_mark_probability == Approx(0.25));
  CHECK(spec->delay_us == 250);
  CHECK(spec->seed == 42);
  CHECK(spec->any());

  auto empty = vroce::parse_fault_spec("");
  REQUIRE(empty);
  CHECK_FALSE(empty->any());
  CHECK(empty->seed == 1);
  auto ecn_only = vroce::parse_fault_spec("ecn=1");
  REQUIRE(ecn_only);
  CHECK(ecn_only->any());
  const std::string error = failure_of(vroce::parse_fault_spec("ecn=1.5"));
  CHECK(error.find("ecn must be a probability") != std::string::npos);
}

TEST_CASE("fault spec: rejections", "[config]") {
  struct Case {
    const char* text;
    const char* reason;
  };
  const Case cases[] = {
      {"drop=1.5", "drop must be a probability between 0 and 1"},
      {"dup=-0.1", "dup must be a probability"},
      {"corrupt=abc", "corrupt must be a probability"},
      {"drop=nan", "drop must be a probability"},
      {"every=-1", "every must be a whole number"},
      {"every=3x", "every must be a whole number"},
      {"psn=16777216", "PSNs below 2^24"},
      {"psn=", "PSNs below 2^24"},
      {"psn=1::2", "PSNs below 2^24"},
      {"delay_us=10000001", "delay_us must be"},
      {"seed=", "seed must be a whole number"},
      {"loss=0.1", "unknown key \"loss\""},
      {"drop", "is not <key>=<value>"},
      {"drop=0.1,drop=0.2", "appears twice"},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    const std::string error = failure_of(vroce::parse_fault_spec(c.text));
    CHECK(contains(error, c.reason));
  }
}

TEST_CASE("port speed, time scale and traffic class", "[config]") {
  for (uint32_t gbps : {100U, 200U, 400U, 800U}) {
    CHECK(vroce::parse_port_speed_gbps(std::to_string(gbps)) == gbps);
  }
  for (const char* bad : {"300", "0", "400G", "", "-400", "1e2"}) {
    INFO(bad);
    const std::string error = failure_of(vroce::parse_port_speed_gbps(bad));
    CHECK(contains(error, "100, 200, 400 and 800"));
  }

  CHECK(vroce::parse_time_scale("0.001") == Approx(0.001));
  CHECK(vroce::parse_time_scale("1") == Approx(1.0));
  CHECK(vroce::parse_time_scale("1000") == Approx(1000.0));
  for (const char* bad : {"0", "-1", "1001", "inf", "fast", ""}) {
    INFO(bad);
    const std::string error = failure_of(vroce::parse_time_scale(bad));
    CHECK(contains(error, "above 0 and at most 1000"));
  }

  CHECK(vroce::parse_traffic_class("106") == 106);
  CHECK(vroce::parse_traffic_class("0") == 0);
  CHECK(vroce::parse_traffic_class("255") == 255);
  for (const char* bad : {"256", "-1", "0x6a", "DSCP26", ""}) {
    INFO(bad);
    const std::string error = failure_of(vroce::parse_traffic_class(bad));
    CHECK(contains(error, "0 to 255"));
  }
}

TEST_CASE("GPU stall warning delay", "[config]") {
  CHECK(vroce::parse_stall_warn_ms("1") == 1U);
  CHECK(vroce::parse_stall_warn_ms(" 250 ") == 250U);
  CHECK(vroce::parse_stall_warn_ms("3600000") == 3'600'000U);
  for (const char* bad : {"0", "3600001", "-5", "5s", "", "1.5"}) {
    INFO(bad);
    const std::string error = failure_of(vroce::parse_stall_warn_ms(bad));
    CHECK(contains(error, "milliseconds, from 1 to 3600000"));
  }
}

TEST_CASE("progress thread spin after activity", "[config]") {
  CHECK(vroce::parse_spin_us("0") == 0U);
  CHECK(vroce::parse_spin_us(" 50 ") == 50U);
  CHECK(vroce::parse_spin_us("100000") == 100'000U);
  for (const char* bad : {"100001", "-1", "50us", "", "2.5"}) {
    INFO(bad);
    const std::string error = failure_of(vroce::parse_spin_us(bad));
    CHECK(contains(error, "microseconds, from 0 (never spin) to 100000"));
  }
}

TEST_CASE("UDP GSO and GRO switch", "[config]") {
  CHECK(vroce::parse_gso("1") == true);
  CHECK(vroce::parse_gso(" 0 ") == false);
  for (const char* bad : {"", "on", "2", "yes"}) {
    INFO(bad);
    const std::string error = failure_of(vroce::parse_gso(bad));
    CHECK(contains(error, "VROCE_GSO is 1"));
  }
}

TEST_CASE("device identity", "[config]") {
  CHECK(vroce::parse_identity("vroce") == false);
  CHECK(vroce::parse_identity(" connectx7 ") == true);
  for (const char* bad : {"mlx5", "ConnectX-7", ""}) {
    INFO(bad);
    const std::string error = failure_of(vroce::parse_identity(bad));
    CHECK(contains(error, "vroce"));
    CHECK(contains(error, "connectx7"));
  }
}

TEST_CASE("where GPU copies are made", "[config]") {
  CHECK(vroce::parse_gpu_copies("helper") == true);
  CHECK(vroce::parse_gpu_copies(" in-process ") == false);
  for (const char* bad : {"inprocess", "1", "", "HELPER"}) {
    INFO(bad);
    const std::string error = failure_of(vroce::parse_gpu_copies(bad));
    CHECK(contains(error, "helper"));
    CHECK(contains(error, "in-process"));
  }
}

TEST_CASE("whether small GPU copies go to the copy helper's kernel, and up to which size",
          "[config]") {
  CHECK(vroce::parse_gpu_copy_kernel("auto") == vroce::GpuCopyKernel::Auto);
  CHECK(vroce::parse_gpu_copy_kernel(" on ") == vroce::GpuCopyKernel::On);
  CHECK(vroce::parse_gpu_copy_kernel("off") == vroce::GpuCopyKernel::Off);
  for (const char* bad : {"1", "yes", "", "AUTO", "mps"}) {
    INFO(bad);
    const std::string error = failure_of(vroce::parse_gpu_copy_kernel(bad));
    CHECK(contains(error, "auto"));
    CHECK(contains(error, "MPS"));
  }
  CHECK(vroce::parse_gpu_copy_kernel_max("0") == 0U);
  CHECK(vroce::parse_gpu_copy_kernel_max(" 4096 ") == 4096U);
  CHECK(vroce::parse_gpu_copy_kernel_max("1048576") == 1048576U);
  for (const char* bad : {"1048577", "-1", "4k", "", "4096 bytes"}) {
    INFO(bad);
    CHECK(contains(failure_of(vroce::parse_gpu_copy_kernel_max(bad)), "1048576"));
  }
  std::vector<std::string> errors;
  const Config bad = parse({{"VROCE_GPU_COPY_KERNEL_MAX", "2M"}}, &errors);
  CHECK(bad.gpu_copy_kernel_max == 4096U);
  REQUIRE(errors.size() == 1);
  CHECK(contains(errors[0], "VROCE_GPU_COPY_KERNEL_MAX=\"2M\" is invalid"));
  CHECK(contains(errors[0], "keeping 4096"));
  CHECK(vroce::parse_gpu_copy_kernel_idle_ms("1") == 1U);
  CHECK(vroce::parse_gpu_copy_kernel_idle_ms(" 3600000 ") == 3600000U);
  for (const char* rejected : {"0", "3600001", "20ms", ""}) {
    INFO(rejected);
    CHECK(contains(failure_of(vroce::parse_gpu_copy_kernel_idle_ms(rejected)), "3600000"));
  }
}

TEST_CASE("which wire packets take to the devices of this host", "[config]") {
  CHECK(vroce::parse_wire("udp") == false);
  CHECK(vroce::parse_wire(" shm ") == true);
  for (const char* bad : {"SHM", "shared", "1", ""}) {
    INFO(bad);
    const std::string error = failure_of(vroce::parse_wire(bad));
    CHECK(contains(error, "VROCE_WIRE"));
    CHECK(contains(error, "udp"));
    CHECK(contains(error, "shm"));
  }
}

TEST_CASE("ECE options and a shared sys_image_guid", "[config]") {
  auto ece = vroce::parse_ece("0x10000006");
  REQUIRE(ece);
  CHECK(ece->enabled);
  CHECK(ece->options == 0x10000006U);
  ece = vroce::parse_ece(" off ");
  REQUIRE(ece);
  CHECK_FALSE(ece->enabled);
  for (const char* bad : {"", "on", "0x1g", "0x123456789"}) {
    INFO(bad);
    const std::string error = failure_of(vroce::parse_ece(bad));
    CHECK(contains(error, "VROCE_ECE"));
  }
  CHECK(vroce::parse_guid("0x0002c90300a1b2c3") == 0x0002c90300a1b2c3ULL);
  for (const char* bad : {"", "0", "0xzz", "0x10000000000000000"}) {
    INFO(bad);
    const std::string error = failure_of(vroce::parse_guid(bad));
  }
  std::vector<std::string> errors;
  const Config defaults = parse({}, &errors);
  CHECK(defaults.ece_enabled);
  CHECK(defaults.ece_options == 0x30000002U);
  CHECK_FALSE(defaults.sys_image_guid);
  const Config set = parse({{"VROCE_ECE", "off"}, {"VROCE_SYS_IMAGE_GUID", "0xabc"}}, &errors);
  CHECK(errors.empty());
  CHECK_FALSE(set.ece_enabled);
  CHECK(set.sys_image_guid == 0xabcU);
}

TEST_CASE("VROCE_PCI_FUNCTIONS: groups of devices that are the functions of one PCI device",
          "[config]") {
  auto groups = vroce::parse_pci_functions(" pfa + pfb ,pfc+pfd+pfe");
  REQUIRE(groups);
  REQUIRE(groups->size() == 2);
  CHECK((*groups)[0] == std::vector<std::string>{"pfa", "pfb"});
  CHECK((*groups)[1] == std::vector<std::string>{"pfc", "pfd", "pfe"});
  CHECK(vroce::parse_pci_functions("")->empty());
  CHECK(contains(failure_of(vroce::parse_pci_functions("pfa")), "2 to 8"));
  CHECK(contains(failure_of(vroce::parse_pci_functions("a+b+c+d+e+f+g+h+i")), "has 9 functions"));
  CHECK(contains(failure_of(vroce::parse_pci_functions("pfa+pfb,pfb+pfc")), "pfb is in two"));
  CHECK(contains(failure_of(vroce::parse_pci_functions("pfa+")), "device name \"\""));
  CHECK(contains(failure_of(vroce::parse_pci_functions("pfa+1x")), "\"1x\""));

  std::vector<std::string> errors;
  const Config set =
      parse({{"VROCE_DEVICES", "pfa=127.0.0.1,pfb=127.0.0.2"}, {"VROCE_PCI_FUNCTIONS", "pfa+pfb"}},
            &errors);
  CHECK(errors.empty());
  REQUIRE(set.pci_functions.size() == 1);
  CHECK(set.pci_functions[0] == std::vector<std::string>{"pfa", "pfb"});
  // A name VROCE_DEVICES does not hold is refused whole, naming it.
  const Config typo =
      parse({{"VROCE_DEVICES", "pfa=127.0.0.1,pfb=127.0.0.2"}, {"VROCE_PCI_FUNCTIONS", "pfa+pfc"}},
            &errors);
  CHECK(typo.pci_functions.empty());
  REQUIRE(errors.size() == 1);
  CHECK(contains(errors[0], "VROCE_PCI_FUNCTIONS names pfc"));
}

TEST_CASE("parse_config: defaults when nothing is set", "[config]") {
  std::vector<std::string> errors;
  Config config = parse({}, &errors);
  CHECK(errors.empty());
  CHECK(config.devices.size() == 8);
  CHECK(config.port_speed_gbps == 400);
  CHECK(config.time_scale == Approx(1.0));
  CHECK_FALSE(config.faults.any());
  CHECK_FALSE(config.stats_file);
  CHECK_FALSE(config.sysfs_root);
  CHECK_FALSE(config.tc_override);
  CHECK(config.gpu_stall_warn_ms == 5000U);
  CHECK_FALSE(config.spin_us);
  CHECK_FALSE(config.connectx7_identity);
  CHECK(config.gso);
  CHECK_FALSE(config.shm_wire);  // UDP unless asked
  CHECK(config.gpu_copies_by_helper);
  CHECK(config.gpu_copy_kernel == vroce::GpuCopyKernel::Auto);
  CHECK(config.gpu_copy_kernel_max == 4096U);
  CHECK(config.gpu_copy_kernel_idle_ms == 20U);
}

TEST_CASE("parse_config: every variable read", "[config]") {
  std::vector<std::string> errors;
  Config config = parse({{"VROCE_DEVICES", "a=127.0.2.1"},
                         {"VROCE_PORT_GBPS", "800"},
                         {"VROCE_TIME_SCALE", "0.01"},
                         {"VROCE_FAULTS", "drop=0.1,seed=7"},
                         {"VROCE_STATS_FILE", "/tmp/s.json"},
                         {"VROCE_SYSFS_ROOT", "/tmp/sys"},
                         {"VROCE_TC_OVERRIDE", "106"},
                         {"VROCE_GPU_STALL_WARN_MS", "750"},
                         {"VROCE_SPIN_US", "0"},
                         {"VROCE_GSO", "0"},
                         {"VROCE_WIRE", "shm"},
                         {"VROCE_IDENTITY", "connectx7"},
                         {"VROCE_GPU_COPIES", "in-process"},
                         {"VROCE_GPU_COPY_KERNEL", "on"},
                         {"VROCE_GPU_COPY_KERNEL_MAX", "0"},
                         {"VROCE_GPU_COPY_KERNEL_IDLE_MS", "250"}},
                        &errors);
  CHECK(errors.empty());
  CHECK_FALSE(config.gpu_copies_by_helper);
  CHECK(config.gpu_copy_kernel == vroce::GpuCopyKernel::On);
  CHECK(config.gpu_copy_kernel_max == 0U);
  CHECK(config.gpu_copy_kernel_idle_ms == 250U);
  REQUIRE(config.devices.size() == 1);
  CHECK(config.devices[0].name == "a");
  CHECK(config.port_speed_gbps == 800);
  CHECK(config.time_scale == Approx(0.01));
  CHECK(config.faults.drop_probability == Approx(0.1));
  CHECK(config.faults.seed == 7);
  CHECK(config.stats_file == "/tmp/s.json");
  CHECK(config.sysfs_root == "/tmp/sys");
  CHECK(config.tc_override == 106);
  CHECK(config.gpu_stall_warn_ms == 750U);
  CHECK(config.spin_us == 0U);
  CHECK_FALSE(config.gso);
  CHECK(config.shm_wire);
  CHECK(config.connectx7_identity);
}

TEST_CASE("parse_config: a malformed variable keeps its default and says so once", "[config]") {
  std::vector<std::string> errors;
  Config config = parse({{"VROCE_PORT_GBPS", "300"},
                         {"VROCE_DEVICES", "oops"},
                         {"VROCE_TC_OVERRIDE", "300"},
                         {"VROCE_SYSFS_ROOT", ""},
                         {"VROCE_TIME_SCALE", "0.5"}},
                        &errors);
  REQUIRE(errors.size() == 4);
  CHECK(config.port_speed_gbps == 400);
  CHECK(config.devices.size() == 8);
  CHECK_FALSE(config.tc_override);
  CHECK_FALSE(config.sysfs_root);
  CHECK(config.time_scale == Approx(0.5));  // the valid one still applies

  auto mentions = [&](const std::string& variable, const std::string& value,
                      const std::string& keeping) {
    for (const std::string& error : errors) {
      if (contains(error, variable + "=\"" + value + "\"") && contains(error, keeping)) {
        return true;
      }
    }
    return false;
  };
  CHECK(mentions("VROCE_PORT_GBPS", "300", "keeping 400"));
  CHECK(mentions("VROCE_DEVICES", "oops", "keeping the default vroce0..vroce7"));
  CHECK(mentions("VROCE_TC_OVERRIDE", "300", "keeping no traffic-class override"));
  CHECK(mentions("VROCE_SYSFS_ROOT", "", "keeping no fake sysfs"));
}

TEST_CASE("VROCE_PORT_EVENTS: link changes scheduled by device and time, in time order",
          "[config]") {
  auto events = vroce::parse_port_events(" pfb:up@9000, pfb : down @ 3000 ,pfa:down@0");
  REQUIRE(events);
  REQUIRE(events->size() == 3);
  CHECK((*events)[0].device == "pfa");
  CHECK((*events)[0].at_ms == 0);
  CHECK_FALSE((*events)[0].up);
  CHECK((*events)[1].device == "pfb");
  CHECK((*events)[1].at_ms == 3000);
  CHECK_FALSE((*events)[1].up);
  CHECK((*events)[2].at_ms == 9000);
  CHECK((*events)[2].up);
  CHECK(vroce::parse_port_events("")->empty());
  CHECK(contains(failure_of(vroce::parse_port_events("pfa@3000")), "DEVICE:down@MS"));
  CHECK(contains(failure_of(vroce::parse_port_events("pfa:sideways@3000")), "neither down nor up"));
  CHECK(contains(failure_of(vroce::parse_port_events("pfa:down@soon")), "milliseconds"));
  CHECK(contains(failure_of(vroce::parse_port_events("pfa:down@-1")), "milliseconds"));
  CHECK(contains(failure_of(vroce::parse_port_events("p/x:down@1")), "not a vroce device name"));
}
