#include "device/sim/sim_spec.h"

#include <gtest/gtest.h>

#include <string>

#include "npumem/errors.h"

namespace npumem {
namespace {

// The ConfigError message of parsing `text`, or "" when it parses.
std::string error_of(const std::string& text) {
  try {
    parse_sim_spec(text);
  } catch (const ConfigError& error) {
    return error.what();
  }
  return "";
}

void expect_error_mentions(const std::string& text, const std::string& part) {
  const std::string message = error_of(text);
  EXPECT_NE(message.find(part), std::string::npos)
      << "spec '" << text << "' gave '" << message << "', expected it to mention '" << part << "'";
}

TEST(SimSpec, BareSimGivesTheSeedDefaults) {
  const SimSpec spec = parse_sim_spec("sim");
  EXPECT_EQ(spec.hbm_bytes, 64 * GiB);
  EXPECT_EQ(spec.ddr_bytes, 128 * GiB);
  EXPECT_EQ(spec.hbm_bandwidth, 1'200'000'000'000U);
  EXPECT_EQ(spec.ddr_bandwidth, 50'000'000'000U);
  EXPECT_EQ(spec.granularity, 2 * MiB);
  EXPECT_EQ(spec.cache_bytes, 8 * MiB);
  EXPECT_EQ(spec.backing, Backing::none);
  EXPECT_TRUE(spec.virtual_memory);
  EXPECT_EQ(spec.id, 0U);
  EXPECT_FALSE(spec.faults.enabled());
  EXPECT_EQ(spec.faults.ops, kAllFaultOps);
}

TEST(SimSpec, EveryKeySetsItsField) {
  const SimSpec spec = parse_sim_spec(
      "sim:hbm=16GiB,ddr=32GiB,hbm_bw=800GB/s,ddr_bw=25000000000,granularity=4MiB,l2=4MiB,"
      "backing=host,vmm=false,id=3,fail_every=7,fail_prob=0.25,seed=42,fail_ops=segment+map");
  EXPECT_EQ(spec.hbm_bytes, 16 * GiB);
  EXPECT_EQ(spec.ddr_bytes, 32 * GiB);
  EXPECT_EQ(spec.hbm_bandwidth, 800'000'000'000U);
  EXPECT_EQ(spec.ddr_bandwidth, 25'000'000'000U);
  EXPECT_EQ(spec.granularity, 4 * MiB);
  EXPECT_EQ(spec.cache_bytes, 4 * MiB);
  EXPECT_EQ(spec.backing, Backing::host);
  EXPECT_FALSE(spec.virtual_memory);
  EXPECT_EQ(spec.id, 3U);
  EXPECT_EQ(spec.faults.every, 7U);
  EXPECT_DOUBLE_EQ(spec.faults.probability, 0.25);
  EXPECT_EQ(spec.faults.seed, 42U);
  EXPECT_TRUE(spec.faults.applies_to(FaultOp::segment));
  EXPECT_FALSE(spec.faults.applies_to(FaultOp::create));
  EXPECT_TRUE(spec.faults.applies_to(FaultOp::map));
}

TEST(SimSpec, SizesAcceptEveryUnit) {
  EXPECT_EQ(parse_sim_spec("sim:hbm=1073741824").hbm_bytes, GiB);
  EXPECT_EQ(parse_sim_spec("sim:hbm=1.5GiB").hbm_bytes, 3 * GiB / 2);
  EXPECT_EQ(parse_sim_spec("sim:hbm=512MB").hbm_bytes, 512 * MiB);
  EXPECT_EQ(parse_sim_spec("sim:ddr=2T").ddr_bytes, 2048 * GiB);
}

TEST(SimSpec, ZeroSizeMakesATierAbsent) {
  EXPECT_EQ(parse_sim_spec("sim:ddr=0").ddr_bytes, 0U);
  EXPECT_EQ(parse_sim_spec("sim:hbm=0").hbm_bytes, 0U);
}

// Larger ones were accepted, and `npumem smi` could not show the process (its pages
// count no more than kMaxTierBytes).
TEST(SimSpec, ATierOfMoreThan64PiBIsRefused) {
  EXPECT_EQ(parse_sim_spec("sim:hbm=64PiB").hbm_bytes, kMaxTierBytes);
  try {
    parse_sim_spec("sim:hbm=1EiB");
    FAIL() << "accepted 1 EiB";
  } catch (const ConfigError& error) {
    EXPECT_NE(std::string(error.what())
                  .find("key 'hbm': 1.00 EiB is more than a device holds "
                        "(64.0 PiB at most)"),
              std::string::npos)
        << error.what();
  }
  EXPECT_THROW(parse_sim_spec("sim:ddr=65PiB"), ConfigError);
}

TEST(SimSpec, BooleansAndFaultOps) {
  EXPECT_TRUE(parse_sim_spec("sim:vmm=true").virtual_memory);
  EXPECT_TRUE(parse_sim_spec("sim:vmm=1").virtual_memory);
  EXPECT_FALSE(parse_sim_spec("sim:vmm=0").virtual_memory);
  EXPECT_EQ(parse_sim_spec("sim:fail_ops=create").faults.ops,
            static_cast<std::uint8_t>(FaultOp::create));
  EXPECT_EQ(parse_sim_spec("sim:fail_ops=map+create+segment").faults.ops, kAllFaultOps);
}

TEST(SimSpec, SpacesAroundKeysAndValuesAreAllowed) {
  const SimSpec spec = parse_sim_spec("sim: hbm = 8GiB , backing = host");
  EXPECT_EQ(spec.hbm_bytes, 8 * GiB);
  EXPECT_EQ(spec.backing, Backing::host);
}

TEST(SimSpec, BadPrefixIsRejected) {
  expect_error_mentions("simulator", "'sim' or 'sim:key=value");
  expect_error_mentions("gpu:hbm=1GiB", "'gpu:hbm=1GiB'");
  expect_error_mentions("", "'sim' or 'sim:key=value");
}

TEST(SimSpec, UnknownKeyIsNamedWithTheAcceptedKeys) {
  expect_error_mentions("sim:hmb=16GiB", "unknown key 'hmb'");
  expect_error_mentions("sim:hmb=16GiB", "hbm, ddr, hbm_bw, ddr_bw, granularity");
  expect_error_mentions("sim:hmb=16GiB", "fail_ops");
}

TEST(SimSpec, MalformedItemsAreRejected) {
  expect_error_mentions("sim:", "is not key=value");
  expect_error_mentions("sim:hbm", "'hbm' is not key=value");
  expect_error_mentions("sim:hbm=1GiB,", "is not key=value");
  expect_error_mentions("sim:hbm=1GiB,,ddr=1GiB", "is not key=value");
  expect_error_mentions("sim:hbm=1GiB,hbm=2GiB", "key 'hbm' given twice");
}

TEST(SimSpec, BadValuesNameTheKeyAndTheAcceptedValues) {
  expect_error_mentions("sim:hbm=lots", "key 'hbm'");
  expect_error_mentions("sim:hbm=lots", "KiB, MiB, GiB");
  expect_error_mentions("sim:ddr=-1GiB", "key 'ddr'");
  expect_error_mentions("sim:hbm_bw=fast", "key 'hbm_bw'");
  expect_error_mentions("sim:ddr_bw=10GB/h", "key 'ddr_bw'");
  expect_error_mentions("sim:granularity=abc", "key 'granularity'");
  expect_error_mentions("sim:l2=x", "key 'l2'");
  expect_error_mentions("sim:backing=disk", "not one of none, host");
  expect_error_mentions("sim:vmm=yes", "not one of true, false, 1, 0");
  expect_error_mentions("sim:id=-1", "key 'id'");
  expect_error_mentions("sim:id=4294967296", "key 'id'");
  expect_error_mentions("sim:fail_every=often", "key 'fail_every'");
  expect_error_mentions("sim:fail_every=1.5", "key 'fail_every'");
  expect_error_mentions("sim:fail_prob=1.5", "not a probability in [0, 1]");
  expect_error_mentions("sim:fail_prob=-0.1", "not a probability in [0, 1]");
  expect_error_mentions("sim:fail_prob=nan", "not a probability in [0, 1]");
  expect_error_mentions("sim:seed=x", "key 'seed'");
  expect_error_mentions("sim:fail_ops=free", "'free' is not a device call");
  expect_error_mentions("sim:fail_ops=segment,map", "'map' is not key=value");
  expect_error_mentions("sim:fail_ops=", "'' is not a device call");
}

TEST(SimSpec, GranularityMustBeAPowerOfTwoOfAtLeastAPage) {
  expect_error_mentions("sim:granularity=3MiB", "key 'granularity'");
  expect_error_mentions("sim:granularity=2KiB", "key 'granularity'");
  expect_error_mentions("sim:granularity=0", "key 'granularity'");
  EXPECT_EQ(parse_sim_spec("sim:granularity=4KiB").granularity, 4 * KiB);
}

TEST(SimSpec, ADeviceNeedsATier) {
  expect_error_mentions("sim:hbm=0,ddr=0", "at least one tier");
}

TEST(SimSpec, ValidateRejectsSpecsBuiltInCode) {
  SimSpec spec;
  spec.granularity = 1000;
  EXPECT_THROW(validate_sim_spec(spec), ConfigError);
  spec = SimSpec{};
  spec.faults.probability = 2.0;
  EXPECT_THROW(validate_sim_spec(spec), ConfigError);
  EXPECT_NO_THROW(validate_sim_spec(SimSpec{}));
}

TEST(SimSpec, ToStringOfTheDefaultsReadsNaturally) {
  EXPECT_EQ(to_string(SimSpec{}),
            "sim:hbm=64GiB,ddr=128GiB,hbm_bw=1200GB/s,ddr_bw=50GB/s,granularity=2MiB,l2=8MiB,"
            "backing=none,vmm=true,id=0");
}

TEST(SimSpec, ToStringReadsBackToTheSameSpec) {
  for (const char* text :
       {"sim", "sim:hbm=1.5GiB,ddr=0,hbm_bw=1234567B/s,backing=host,vmm=false,id=7",
        "sim:fail_every=3,fail_prob=0.1,seed=99,fail_ops=create+map,granularity=64KiB",
        "sim:hbm=12345,ddr=1TiB,fail_prob=0.3333333333333333,fail_ops=segment"}) {
    const SimSpec spec = parse_sim_spec(text);
    const SimSpec again = parse_sim_spec(to_string(spec));
    EXPECT_EQ(to_string(again), to_string(spec)) << text;
    EXPECT_EQ(again.hbm_bytes, spec.hbm_bytes) << text;
    EXPECT_EQ(again.ddr_bytes, spec.ddr_bytes) << text;
    EXPECT_EQ(again.hbm_bandwidth, spec.hbm_bandwidth) << text;
    EXPECT_EQ(again.granularity, spec.granularity) << text;
    EXPECT_EQ(again.backing, spec.backing) << text;
    EXPECT_EQ(again.virtual_memory, spec.virtual_memory) << text;
    EXPECT_EQ(again.id, spec.id) << text;
    EXPECT_EQ(again.faults.every, spec.faults.every) << text;
    EXPECT_EQ(again.faults.probability, spec.faults.probability) << text;
    EXPECT_EQ(again.faults.seed, spec.faults.seed) << text;
    EXPECT_EQ(again.faults.ops, spec.faults.ops) << text;
  }
}

TEST(SimSpec, BackingNames) {
  EXPECT_EQ(backing_name(Backing::none), "none");
  EXPECT_EQ(backing_name(Backing::host), "host");
}

}  // namespace
}  // namespace npumem
