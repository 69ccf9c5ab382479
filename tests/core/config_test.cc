#include "npumem/config.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "npumem/allocator.h"
#include "npumem/device.h"
#include "npumem/errors.h"
#include "npumem/units.h"

namespace npumem {
namespace {

TEST(Config, ParsesEveryKey) {
  const Config c = parse_config(
      "strategy:static,granule:256,small_size:512KiB,small_segment:4MiB,large_segment:32MiB,"
      "large_segment_threshold:16MiB,spill_to_ddr:false,max_split_size:200MiB,"
      "garbage_collection_threshold:0.75,expandable_small_granule:4MiB,"
      "expandable_large_granule:64MiB,static_size:8GiB,static_fallback:true,hbm:16GiB,ddr:1GiB");
  EXPECT_EQ(c.strategy, Strategy::static_arena);
  EXPECT_EQ(c.granule, 256u);
  EXPECT_EQ(c.small_size, 512 * KiB);
  EXPECT_EQ(c.small_segment, 4 * MiB);
  EXPECT_EQ(c.large_segment, 32 * MiB);
  EXPECT_EQ(c.large_segment_threshold, 16 * MiB);
  EXPECT_FALSE(c.spill_to_ddr);
  EXPECT_EQ(c.max_split_size, 200 * MiB);
  EXPECT_DOUBLE_EQ(c.garbage_collection_threshold, 0.75);
  EXPECT_EQ(c.expandable_small_granule, 4 * MiB);
  EXPECT_EQ(c.expandable_large_granule, 64 * MiB);
  EXPECT_EQ(c.static_size, 8 * GiB);
  EXPECT_TRUE(c.static_fallback);
  EXPECT_EQ(c.hbm_limit, 16 * GiB);
  EXPECT_EQ(c.ddr_limit, 1 * GiB);
}

TEST(Config, ExpandableSegmentsSwitchesStrategy) {
  EXPECT_EQ(parse_config("expandable_segments:true").strategy, Strategy::expandable);
  EXPECT_EQ(parse_config("expandable_segments:true,expandable_segments:false").strategy,
            Strategy::caching);
}

// Settings copied from PYTORCH_CUDA_ALLOC_CONF mean what they mean there.
TEST(Config, AcceptsPyTorchSpellings) {
  EXPECT_EQ(parse_config("expandable_segments:True").strategy, Strategy::expandable);
  EXPECT_EQ(parse_config("expandable_segments:False").strategy, Strategy::caching);
  EXPECT_EQ(parse_config("max_split_size_mb:128").max_split_size, 128 * MiB);
  EXPECT_TRUE(parse_config("spill_to_ddr:True").spill_to_ddr);
}

TEST(Config, RoundTripsThroughText) {
  Config c;
  c.strategy = Strategy::expandable;
  c.granule = 1024;
  c.garbage_collection_threshold = 0.6;
  c.max_split_size = 123 * MiB;
  c.planned_max_plans = 32;
  const Config back = parse_config(to_string(c));
  EXPECT_EQ(to_string(back), to_string(c));
  EXPECT_EQ(back.strategy, Strategy::expandable);
  EXPECT_DOUBLE_EQ(back.garbage_collection_threshold, 0.6);
  EXPECT_EQ(back.planned_max_plans, 32u);
}

TEST(Config, SpacesAndEmptyItemsAreTolerated) {
  EXPECT_EQ(parse_config(" granule : 1024 ,, spill_to_ddr:0 ").granule, 1024u);
  EXPECT_EQ(parse_config("").granule, Config{}.granule);
}

void expect_error(const std::string& text, const std::string& fragment) {
  try {
    parse_config(text);
    FAIL() << "accepted " << text;
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

// Blocks of max_split_size and more serve only requests about their size: at or below
// large_segment, a new large segment could serve none of the requests it is made for
// (every shared trace ran out of memory at max_split_size_mb:16).
TEST(Config, MaxSplitSizeMustExceedTheLargeSegment) {
  Config config;
  config.max_split_size = 16 * MiB;
  try {
    validate(config);
    FAIL() << "max_split_size below large_segment accepted";
  } catch (const ConfigError& error) {
    const std::string what = error.what();
    EXPECT_NE(what.find("max_split_size (16.0 MiB) must be larger than large_segment (20.0 MiB)"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("more than 20"), std::string::npos) << what;
  }
  // Built in code, the config is named as the source; read from text, the caller names
  // it ("--conf: ", "NPUMEM_ALLOC_CONF: "), and a second prefix read "--conf: config: ".
  try {
    Allocator allocator(make_device("sim"), config);
    FAIL() << "max_split_size below large_segment accepted";
  } catch (const ConfigError& error) {
    EXPECT_EQ(std::string(error.what()).rfind("config: max_split_size (16.0 MiB)", 0), 0u)
        << error.what();
  }
  // What parses is valid: the text is refused as it is read.
  expect_error("max_split_size_mb:20", "must be larger than large_segment");
  try {
    parse_config("max_split_size_mb:20");
  } catch (const ConfigError& error) {
    EXPECT_EQ(std::string(error.what()).rfind("max_split_size (20.0 MiB)", 0), 0u) << error.what();
  }
  EXPECT_NO_THROW(validate(parse_config("max_split_size_mb:21")));
  EXPECT_NO_THROW(validate(parse_config("large_segment:4MiB,max_split_size_mb:8")));
}

TEST(Config, BadInputNamesTheKeyAndTheAcceptedValues) {
  expect_error("colour:blue", "unknown key 'colour'");
  expect_error("colour:blue", "granule");  // lists the known keys
  expect_error("granule", "not key:value");
  expect_error("strategy:fast", "caching, expandable, static, planned");
  expect_error("granule:1000", "power of two");
  expect_error("granule:32", "from 64 B");
  expect_error("granule:lots", "'granule'");
  expect_error("spill_to_ddr:maybe", "true, false");
  expect_error("static_fallback:yes", "'static_fallback'");
  expect_error("garbage_collection_threshold:1.5", "strictly between 0 and 1");
  expect_error("garbage_collection_threshold:abc", "garbage_collection_threshold");
  expect_error("max_split_size:0", "'max_split_size'");
  expect_error("hbm:-1", "'hbm'");
  expect_error("ddr:12XB", "'ddr'");
  expect_error("small_size:", "'small_size'");
  expect_error("expandable_segments:TRUE", "True, False");
  expect_error("max_split_size_mb:1.5", "whole number of MiB");
  expect_error("max_split_size_mb:0", "'max_split_size_mb'");
  expect_error("max_split_size_mb:99999999999999999999", "'max_split_size_mb'");
  expect_error("max_split_size_mb:1073741825", "from 1 to 1073741824 (1 PiB)");
  expect_error("roundup_power2_divisions:4", "a PyTorch allocator setting npumem does not have");
  expect_error("planned_max_plans:0", "from 1 to 256");
  expect_error("planned_max_plans:257", "'planned_max_plans'");
  expect_error("planned_max_plans:-3", "'planned_max_plans'");
}

// expandable_segments:false turns expandable off and leaves any other strategy, from
// the environment too; with strategy:X in one text, expandable_segments:true disagrees,
// and false with strategy:expandable.
TEST(Config, ExpandableSegmentsFalseLeavesAnotherStrategy) {
  ::setenv("NPUMEM_ALLOC_CONF", "strategy:planned", 1);
  EXPECT_EQ(config_over_environment("expandable_segments:false", "--conf").strategy,
            Strategy::planned);
  EXPECT_EQ(config_over_environment("expandable_segments:true", "--conf").strategy,
            Strategy::expandable)
      << "over the environment, true is the strategy given";
  ::setenv("NPUMEM_ALLOC_CONF", "strategy:static,static_size:64MiB", 1);
  EXPECT_EQ(config_over_environment("expandable_segments:False", "--conf").strategy,
            Strategy::static_arena);
  ::setenv("NPUMEM_ALLOC_CONF", "strategy:expandable", 1);
  EXPECT_EQ(config_over_environment("expandable_segments:0", "--conf").strategy, Strategy::caching);
  ::unsetenv("NPUMEM_ALLOC_CONF");
  EXPECT_EQ(parse_config("strategy:planned,expandable_segments:false").strategy, Strategy::planned);
  EXPECT_EQ(parse_config("strategy:expandable,expandable_segments:true").strategy,
            Strategy::expandable);
  expect_error("strategy:planned,expandable_segments:true",
               "strategy:planned and expandable_segments:true disagree");
  expect_error("expandable_segments:True,strategy:static",
               "strategy:static and expandable_segments:true disagree");
  // false beside strategy:expandable gave caching or expandable by their order.
  expect_error("strategy:expandable,expandable_segments:false",
               "strategy:expandable and expandable_segments:false disagree");
  expect_error("expandable_segments:false,strategy:expandable",
               "strategy:expandable and expandable_segments:false disagree");
  EXPECT_EQ(parse_config("expandable_segments:false,strategy:caching").strategy, Strategy::caching);
}

TEST(Config, ReadsTheEnvironment) {
  ::setenv("NPUMEM_ALLOC_CONF", "granule:2048", 1);
  EXPECT_EQ(config_from_environment().granule, 2048u);
  ::setenv("NPUMEM_ALLOC_CONF", "granule:x", 1);
  EXPECT_THROW(config_from_environment(), ConfigError);
  ::unsetenv("NPUMEM_ALLOC_CONF");
  EXPECT_EQ(config_from_environment().granule, 512u);
}

// A setting given over the environment replaces the environment's setting of that key,
// bad or not: a bad NPUMEM_ALLOC_CONF must not stand in the way of the --conf that
// corrects it. Its other entries are still read and still checked, and each error says
// where the bad setting came from.
TEST(Config, SettingsOverTheEnvironmentReplaceItsKeys) {
  const auto error_of = [](std::string_view conf) {
    try {
      config_over_environment(conf, "--conf");
    } catch (const ConfigError& error) {
      return std::string(error.what());
    }
    return std::string("no error");
  };
  ::setenv("NPUMEM_ALLOC_CONF", "strategy:bogus,granule:2048", 1);
  const Config config = config_over_environment("strategy:expandable", "--conf");
  EXPECT_EQ(config.strategy, Strategy::expandable);
  EXPECT_EQ(config.granule, 2048u);
  EXPECT_EQ(error_of(" granule : 4096"),
            "NPUMEM_ALLOC_CONF: bad value 'bogus' for key "
            "'strategy' (accepted: caching, expandable, static, "
            "planned)");
  EXPECT_EQ(error_of("strategy:caching,granule:y").rfind("--conf: bad value 'y'", 0), 0u);
  ::setenv("NPUMEM_ALLOC_CONF", "granule:x,oops", 1);
  EXPECT_EQ(error_of("granule:1024").rfind("NPUMEM_ALLOC_CONF: 'oops' is not key:value", 0), 0u);
  ::setenv("NPUMEM_ALLOC_CONF", "granule:x", 1);
  EXPECT_EQ(config_over_environment("granule:1024,granule:4096", "--conf").granule, 4096u);
  // Both bad: both errors, so that one fix is not followed by another surprise.
  ::setenv("NPUMEM_ALLOC_CONF", "small_size:x", 1);
  EXPECT_EQ(error_of("granule:y"),
            "NPUMEM_ALLOC_CONF: bad value 'x' for key 'small_size' (accepted: a size such as 512, "
            "2MiB, 1.5GiB); and --conf: bad value 'y' for key 'granule' (accepted: a size such "
            "as 512, 2MiB, 1.5GiB)");
  // PyTorch's spellings replace npumem's and the other way round.
  ::setenv("NPUMEM_ALLOC_CONF", "max_split_size_mb:bogus,expandable_segments:bogus", 1);
  const Config spelled = config_over_environment("max_split_size:64MiB,strategy:caching", "c");
  EXPECT_EQ(spelled.max_split_size, 64 * MiB);
  EXPECT_EQ(spelled.strategy, Strategy::caching);
  ::setenv("NPUMEM_ALLOC_CONF", "max_split_size:1MiB", 1);
  EXPECT_EQ(config_over_environment("max_split_size_mb:64", "c").max_split_size, 64 * MiB);
  // Settings that do not go together, one from each: both sources are named.
  ::setenv("NPUMEM_ALLOC_CONF", "max_split_size:30MiB", 1);
  EXPECT_EQ(
      error_of("large_segment:40MiB").rfind("--conf over NPUMEM_ALLOC_CONF: max_split_size", 0),
      0u);
  EXPECT_EQ(error_of("large_segment:40MiB,max_split_size:35MiB").rfind("--conf: max_split", 0), 0u);
  ::unsetenv("NPUMEM_ALLOC_CONF");
  EXPECT_EQ(config_over_environment("", "--conf").granule, 512u);
}

}  // namespace
}  // namespace npumem
