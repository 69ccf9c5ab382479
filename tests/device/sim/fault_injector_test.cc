#include "device/sim/fault_injector.h"

#include <gtest/gtest.h>

#include <vector>

namespace npumem {
namespace {

std::vector<bool> first_calls(FaultInjector& injector, FaultOp op, int count) {
  std::vector<bool> fails;
  for (int i = 0; i < count; ++i) fails.push_back(injector.should_fail(op));
  return fails;
}

TEST(FaultInjector, DisabledNeverFails) {
  FaultInjector injector;
  for (bool fails : first_calls(injector, FaultOp::segment, 1000)) EXPECT_FALSE(fails);
}

TEST(FaultInjector, EveryNthEligibleCallFails) {
  FaultInjector injector(FaultSpec{.every = 3});
  EXPECT_EQ(first_calls(injector, FaultOp::segment, 7),
            (std::vector<bool>{false, false, true, false, false, true, false}));
}

TEST(FaultInjector, EveryOneFailsEverything) {
  FaultInjector injector(FaultSpec{.every = 1});
  for (bool fails : first_calls(injector, FaultOp::map, 10)) EXPECT_TRUE(fails);
}

TEST(FaultInjector, IneligibleCallsNeitherFailNorCount) {
  FaultInjector injector(FaultSpec{.every = 2, .ops = static_cast<std::uint8_t>(FaultOp::create)});
  EXPECT_FALSE(injector.should_fail(FaultOp::create));
  EXPECT_FALSE(injector.should_fail(FaultOp::segment));
  EXPECT_FALSE(injector.should_fail(FaultOp::map));
  EXPECT_TRUE(injector.should_fail(FaultOp::create));
}

TEST(FaultInjector, EligibleKindsShareOneCount) {
  FaultInjector injector(FaultSpec{.every = 2});
  EXPECT_FALSE(injector.should_fail(FaultOp::segment));
  EXPECT_TRUE(injector.should_fail(FaultOp::create));
  EXPECT_FALSE(injector.should_fail(FaultOp::map));
  EXPECT_TRUE(injector.should_fail(FaultOp::segment));
}

TEST(FaultInjector, ProbabilityIsDeterministicPerSeed) {
  FaultInjector a(FaultSpec{.probability = 0.3, .seed = 17});
  FaultInjector b(FaultSpec{.probability = 0.3, .seed = 17});
  FaultInjector c(FaultSpec{.probability = 0.3, .seed = 18});
  const std::vector<bool> first = first_calls(a, FaultOp::segment, 500);
  EXPECT_EQ(first, first_calls(b, FaultOp::segment, 500));
  EXPECT_NE(first, first_calls(c, FaultOp::segment, 500));
}

TEST(FaultInjector, ProbabilityMatchesTheRateOverManyCalls) {
  FaultInjector injector(FaultSpec{.probability = 0.25, .seed = 1});
  int failures = 0;
  for (bool fails : first_calls(injector, FaultOp::segment, 20000)) failures += fails ? 1 : 0;
  EXPECT_GT(failures, 4500);
  EXPECT_LT(failures, 5500);
}

TEST(FaultInjector, ProbabilityOneAlwaysFails) {
  FaultInjector injector(FaultSpec{.probability = 1.0});
  for (bool fails : first_calls(injector, FaultOp::create, 100)) EXPECT_TRUE(fails);
}

}  // namespace
}  // namespace npumem
