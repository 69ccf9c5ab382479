#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "npumem/errors.h"
#include "npumem/plan.h"
#include "plan_checker.h"

namespace npumem::plan {
namespace {

TEST(MemoryBoundsTest, LowerBoundOfHandMadeCases) {
  // A chain: each tensor meets the next one only.
  const std::vector<TensorLifetime> chain{{100, 0, 1}, {200, 1, 2}, {300, 2, 3}, {50, 3, 4}};
  EXPECT_EQ(memory_lower_bound(chain, 1), 500u);  // op 2: 200 + 300
  // Disjoint lifetimes: the largest tensor.
  const std::vector<TensorLifetime> apart{{100, 0, 0}, {300, 1, 1}, {200, 2, 2}};
  EXPECT_EQ(memory_lower_bound(apart, 1), 300u);
  // Nested lifetimes all meet at op 5.
  const std::vector<TensorLifetime> nested{{1, 0, 9}, {2, 3, 7}, {4, 5, 5}};
  EXPECT_EQ(memory_lower_bound(nested, 1), 7u);
  // Inclusive ends: [0, 2] and [2, 4] meet at op 2.
  const std::vector<TensorLifetime> touching{{10, 0, 2}, {20, 2, 4}};
  EXPECT_EQ(memory_lower_bound(touching, 1), 30u);
}

TEST(MemoryBoundsTest, SizesAreAlignedBeforeSumming) {
  const std::vector<TensorLifetime> tensors{{1, 0, 1}, {1, 1, 2}, {65, 1, 1}};
  EXPECT_EQ(memory_lower_bound(tensors, 1), 67u);
  EXPECT_EQ(memory_lower_bound(tensors, 64), 256u);  // 64 + 64 + 128
  EXPECT_EQ(naive_memory(tensors, 64), 256u);
  EXPECT_EQ(naive_memory(tensors, 1), 67u);
}

TEST(MemoryBoundsTest, EmptyOneAndZeroByteTensors) {
  EXPECT_EQ(memory_lower_bound({}, 64), 0u);
  EXPECT_EQ(naive_memory({}, 64), 0u);
  const std::vector<TensorLifetime> one{{1000, 3, 9}};
  EXPECT_EQ(memory_lower_bound(one, 64), 1024u);
  const std::vector<TensorLifetime> empty_tensors{{0, 0, 4}, {0, 2, 2}};
  EXPECT_EQ(memory_lower_bound(empty_tensors, 64), 0u);
}

TEST(MemoryBoundsTest, MatchesTheDefinitionOnRandomInstances) {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    const auto tensors = testing::random_tensors(1 + seed * 7, 50, 5000, seed);
    EXPECT_EQ(memory_lower_bound(tensors, 64), testing::brute_force_lower_bound(tensors, 64))
        << "seed " << seed;
  }
}

TEST(MemoryBoundsTest, OverflowingLiveBytesThrow) {
  const std::vector<TensorLifetime> tensors{{1ull << 63, 0, 1}, {1ull << 63, 1, 2}};
  EXPECT_THROW(memory_lower_bound(tensors, 64), Error);
  EXPECT_EQ(naive_memory(tensors, 64), ~std::uint64_t{0});
}

TEST(MemoryBoundsTest, RatioOfArenaToLowerBound) {
  MemoryPlan plan;
  EXPECT_DOUBLE_EQ(plan.ratio(), 1.0);
  plan.lower_bound_bytes = 200;
  plan.arena_bytes = 250;
  EXPECT_DOUBLE_EQ(plan.ratio(), 1.25);
}

// The lower bounds ../shared/records/SUMMARY.md gives (sizes there are multiples of 64).
TEST(MemoryBoundsTest, SharedRecordsHaveTheirPublishedLowerBounds) {
  const std::map<std::string, std::uint64_t> published{
      {"resnet50", 9'633'792},        {"resnet18", 6'422'528},
      {"mobilenet_v2", 9'633'792},    {"mobilenet_v3_large", 6'422'528},
      {"efficientnet_b0", 9'633'792}, {"vit_b_16", 5'446'656},
      {"inception_v3", 11'063'808},   {"squeezenet1_0", 5'971'968},
      {"googlenet", 6'422'528},       {"unet", 67'108'864}};
  for (const auto& [model, bound] : published) {
    std::ifstream in(std::string(NPUMEM_SHARED_DIR) + "/records/" + model + ".records");
    if (!in) GTEST_SKIP() << "no shared records";
    std::ostringstream text;
    text << in.rdbuf();
    EXPECT_EQ(memory_lower_bound(parse_lifetime_records(text.str(), model), 64), bound) << model;
  }
}

}  // namespace
}  // namespace npumem::plan
