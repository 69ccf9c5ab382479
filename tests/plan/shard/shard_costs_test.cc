#include "plan/shard/shard_costs.h"

#include <gtest/gtest.h>

#include "npumem/errors.h"

namespace npumem::plan {
namespace {

// Weights 100, 200, 300, 400; outputs 10, 20, 30, 40; model input 5.
const std::vector<Layer> kLayers{
    {"l0", 100, 10, 1.0}, {"l1", 200, 20, 2.0}, {"l2", 300, 30, 3.0}, {"l3", 400, 40, 4.0}};

ShardOptions options(std::uint64_t budget) {
  ShardOptions result;
  result.hbm_budget_bytes = budget;
  result.load_bytes_per_s = 100.0;
  result.timing.input_bytes = 5;
  return result;
}

TEST(ShardCostsTest, SumsWeightsAndTakesTheLargestActivationPair) {
  const ShardCosts costs(kLayers, options(1000));
  EXPECT_EQ(costs.layer_count(), 4u);
  EXPECT_EQ(costs.weight_bytes(1, 3), 500u);
  EXPECT_EQ(costs.activation_bytes(0, 1), 15u);  // input 5 + output 10
  EXPECT_EQ(costs.activation_bytes(1, 3), 50u);  // l2: 20 + 30
  EXPECT_EQ(costs.resident_bytes(1, 3), 550u);
  EXPECT_DOUBLE_EQ(costs.load_seconds(1, 3), 5.0);
  EXPECT_DOUBLE_EQ(costs.compute_seconds(1, 3), 5.0);
}

TEST(ShardCostsTest, FitsAloneAndBesideTheNextShard) {
  const ShardCosts costs(kLayers, options(1000));
  EXPECT_TRUE(costs.fits(0, 3));                // 600 + 50
  EXPECT_FALSE(costs.fits(0, 4));               // 1000 + 70
  EXPECT_TRUE(costs.fits_with_next(0, 2, 3));   // 300 + 30 + 300
  EXPECT_FALSE(costs.fits_with_next(0, 2, 4));  // 300 + 30 + 700
}

TEST(ShardCostsTest, NamesTheFirstLayerThatCannotFit) {
  const ShardCosts costs(kLayers, options(400));
  try {
    costs.check_every_layer_fits(kLayers);
    FAIL() << "expected OutOfMemory";
  } catch (const OutOfMemory& e) {
    EXPECT_NE(std::string(e.what()).find("layer 3 'l3'"), std::string::npos) << e.what();
    EXPECT_EQ(e.requested_bytes(), 470u);
  }
  EXPECT_NO_THROW(ShardCosts(kLayers, options(470)).check_every_layer_fits(kLayers));
}

TEST(ShardCostsTest, RejectsANonPositiveBandwidth) {
  ShardOptions bad = options(1000);
  bad.load_bytes_per_s = 0;
  EXPECT_THROW(ShardCosts(kLayers, bad), ConfigError);
}

}  // namespace
}  // namespace npumem::plan
