#include "npumem/units.h"

#include <gtest/gtest.h>

#include <string>

#include "npumem/errors.h"

namespace npumem {
namespace {

TEST(ParseSize, PlainBytes) {
  EXPECT_EQ(parse_size("0"), 0U);
  EXPECT_EQ(parse_size("4096"), 4096U);
  EXPECT_EQ(parse_size("512B"), 512U);
}

TEST(ParseSize, BinaryUnitsInEverySpelling) {
  EXPECT_EQ(parse_size("1KiB"), KiB);
  EXPECT_EQ(parse_size("1K"), KiB);
  EXPECT_EQ(parse_size("1KB"), KiB);
  EXPECT_EQ(parse_size("512MiB"), 512 * MiB);
  EXPECT_EQ(parse_size("512M"), 512 * MiB);
  EXPECT_EQ(parse_size("512MB"), 512 * MiB);
  EXPECT_EQ(parse_size("16GiB"), 16 * GiB);
  EXPECT_EQ(parse_size("16G"), 16 * GiB);
  EXPECT_EQ(parse_size("16GB"), 16 * GiB);
  EXPECT_EQ(parse_size("2TiB"), 2048 * GiB);
  EXPECT_EQ(parse_size("2T"), 2048 * GiB);
  EXPECT_EQ(parse_size("2TB"), 2048 * GiB);
  EXPECT_EQ(parse_size("1PiB"), 1024 * 1024 * GiB);  // the sim device's largest tier
  EXPECT_EQ(parse_size("1P"), 1024 * 1024 * GiB);
  EXPECT_EQ(parse_size("1PB"), 1024 * 1024 * GiB);
}

TEST(ParseSize, UnitsIgnoreCaseAndSurroundingSpaces) {
  EXPECT_EQ(parse_size("16gib"), 16 * GiB);
  EXPECT_EQ(parse_size(" 16 GiB "), 16 * GiB);
}

TEST(ParseSize, DecimalFractionsRoundDownToWholeBytes) {
  EXPECT_EQ(parse_size("1.5GiB"), 3 * GiB / 2);
  EXPECT_EQ(parse_size("0.5KiB"), 512U);
  EXPECT_EQ(parse_size(".25MiB"), MiB / 4);
  EXPECT_EQ(parse_size("0.001KiB"), 1U);   // 1.024 bytes
  EXPECT_EQ(parse_size("0.0009KiB"), 0U);  // 0.9216 bytes
  EXPECT_EQ(parse_size("2."), 2U);
  EXPECT_EQ(parse_size("2.00B"), 2U);
}

// In bytes, a fraction is no rounding but a mistake: a quota of "1.5" read as 1 byte.
TEST(ParseSize, AFractionOfAByteIsRefused) {
  for (const char* bad : {"1.5", "1.1B", "0.5"}) {
    try {
      parse_size(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const ConfigError& error) {
      EXPECT_NE(std::string(error.what()).find("'" + std::string(bad) + "': a fraction of a byte"),
                std::string::npos)
          << error.what();
    }
  }
}

// format_bytes prints sizes past 1024 PiB in EiB; they read back.
TEST(ParseSize, ExbibytesReadBackWhatFormatBytesPrints) {
  EXPECT_EQ(parse_size("1EiB"), 1ULL << 60);
  EXPECT_EQ(parse_size("15E"), 15ULL << 60);
  EXPECT_EQ(parse_size(format_bytes(8ULL << 60)), 8ULL << 60);
  EXPECT_THROW(parse_size("16EiB"), ConfigError);
}

TEST(ParseSize, LargestValuesAndOverflow) {
  EXPECT_EQ(parse_size("18446744073709551615"), 18446744073709551615ULL);
  EXPECT_EQ(parse_size("16777215TiB"), 16777215ULL << 40);
  EXPECT_THROW(parse_size("18446744073709551616"), ConfigError);
  EXPECT_THROW(parse_size("16777216TiB"), ConfigError);
  EXPECT_EQ(parse_size("16777215.5TiB"), (16777215ULL << 40) + (1ULL << 39));
}

TEST(ParseSize, RejectsBadTextNamingIt) {
  for (const char* bad : {"", "  ", "-1", "-1GiB", "GiB", "abc", "12XB", "1.2.3", "1e9", "+5",
                          "12 GiB extra", ".", "0x10"}) {
    try {
      parse_size(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const ConfigError& error) {
      EXPECT_NE(std::string(error.what()).find("'" + std::string(bad) + "'"), std::string::npos)
          << error.what();
    }
  }
}

TEST(ParseSize, NegativeSaysSo) {
  try {
    parse_size("-4GiB");
    FAIL();
  } catch (const ConfigError& error) {
    EXPECT_NE(std::string(error.what()).find("negative"), std::string::npos) << error.what();
  }
}

TEST(FormatBytes, SmallValuesInBytes) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
}

TEST(FormatBytes, ThreeSignificantDigits) {
  EXPECT_EQ(format_bytes(KiB), "1.00 KiB");
  EXPECT_EQ(format_bytes(3 * GiB / 2), "1.50 GiB");
  EXPECT_EQ(format_bytes(10 * MiB), "10.0 MiB");
  EXPECT_EQ(format_bytes(100 * MiB), "100 MiB");
  EXPECT_EQ(format_bytes(64 * GiB), "64.0 GiB");
  EXPECT_EQ(format_bytes(2048 * GiB), "2.00 TiB");
}

TEST(FormatBytes, RoundingUpMovesToTheNextUnit) {
  EXPECT_EQ(format_bytes(MiB - 1), "1.00 MiB");
  EXPECT_EQ(format_bytes(18446744073709551615ULL), "16.0 EiB");
}

TEST(ParseBandwidth, DecimalUnitsAndOptionalPerSecond) {
  EXPECT_EQ(parse_bandwidth("1200GB/s"), 1'200'000'000'000U);
  EXPECT_EQ(parse_bandwidth("1.2TB/s"), 1'200'000'000'000U);
  EXPECT_EQ(parse_bandwidth("1.2T"), 1'200'000'000'000U);
  EXPECT_EQ(parse_bandwidth("50GB"), 50'000'000'000U);
  EXPECT_EQ(parse_bandwidth("50gb/S"), 50'000'000'000U);
  EXPECT_EQ(parse_bandwidth("1000"), 1000U);
  EXPECT_EQ(parse_bandwidth("1000B/s"), 1000U);
  EXPECT_EQ(parse_bandwidth("3K"), 3000U);
  EXPECT_EQ(parse_bandwidth("7MB/s"), 7'000'000U);
}

TEST(ParseBandwidth, BinaryUnitsStayBinary) {
  EXPECT_EQ(parse_bandwidth("1GiB/s"), GiB);
  EXPECT_EQ(parse_bandwidth("2MiB"), 2 * MiB);
}

TEST(ParseBandwidth, OverflowInTheFractionIsRejected) {
  EXPECT_EQ(parse_bandwidth("18446744TB/s"), 18'446'744'000'000'000'000U);
  EXPECT_THROW(parse_bandwidth("18446744.5TB/s"), ConfigError);
}

TEST(ParseBandwidth, RejectsBadText) {
  for (const char* bad : {"", "/s", "-1GB/s", "fast", "10GB/h", "10GB/s/s"}) {
    EXPECT_THROW(parse_bandwidth(bad), ConfigError) << bad;
  }
}

TEST(FormatBandwidth, DecimalUnits) {
  EXPECT_EQ(format_bandwidth(999), "999 B/s");
  EXPECT_EQ(format_bandwidth(1'200'000'000'000), "1.20 TB/s");
  EXPECT_EQ(format_bandwidth(50'000'000'000), "50.0 GB/s");
}

TEST(FormatCount, MarksThousands) {
  EXPECT_EQ(format_count(0), "0");
  EXPECT_EQ(format_count(999), "999");
  EXPECT_EQ(format_count(1000), "1,000");
  EXPECT_EQ(format_count(1234567), "1,234,567");
  EXPECT_EQ(format_count(18446744073709551615ULL), "18,446,744,073,709,551,615");
  EXPECT_EQ(format_count(1, "iteration"), "1 iteration");
  EXPECT_EQ(format_count(0, "iteration"), "0 iterations");
  EXPECT_EQ(format_count(2000, "plan"), "2,000 plans");
}

}  // namespace
}  // namespace npumem
