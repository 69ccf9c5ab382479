#include <gtest/gtest.h>

#include <limits>

#include "npumem/errors.h"
#include "npumem/plan.h"

namespace npumem::plan {
namespace {

TEST(LayerTimingTest, GivenTimesAreKept) {
  const std::vector<Layer> layers{{"a", 100, 200, 0.5}, {"b", 0, 0, 0.0}};
  EXPECT_EQ(layer_compute_seconds(layers, {}), (std::vector<double>{0.5, 0.0}));
}

TEST(LayerTimingTest, MissingTimesAreMemoryBoundEstimates) {
  // Each layer moves its weights, its input (the previous output) and its output.
  const std::vector<Layer> layers{{"a", 1000, 3000, std::nullopt}, {"b", 500, 100, std::nullopt}};
  LayerTiming timing;
  timing.hbm_bytes_per_s = 1000.0;
  timing.input_bytes = 2000;
  const std::vector<double> seconds = layer_compute_seconds(layers, timing);
  EXPECT_DOUBLE_EQ(seconds[0], (1000.0 + 2000.0 + 3000.0) / 1000.0);
  EXPECT_DOUBLE_EQ(seconds[1], (500.0 + 3000.0 + 100.0) / 1000.0);
}

TEST(LayerTimingTest, RejectsBadTimesAndBandwidths) {
  const std::vector<Layer> negative{{"a", 1, 1, -1.0}};
  EXPECT_THROW(layer_compute_seconds(negative, {}), ConfigError);
  const std::vector<Layer> infinite{{"a", 1, 1, std::numeric_limits<double>::infinity()}};
  EXPECT_THROW(layer_compute_seconds(infinite, {}), ConfigError);
  LayerTiming no_bandwidth;
  no_bandwidth.hbm_bytes_per_s = 0;
  EXPECT_THROW(layer_compute_seconds({}, no_bandwidth), ConfigError);
}

}  // namespace
}  // namespace npumem::plan
