#include "device/sim/mapping_table.h"

#include <gtest/gtest.h>

namespace npumem {
namespace {

constexpr std::uintptr_t kBase = 0x100000;
constexpr std::size_t kGranule = 0x1000;

class MappingTableTest : public ::testing::Test {
 protected:
  void SetUp() override { table_.add_reservation(kBase, 8 * kGranule); }
  MappingTable table_;
};

TEST_F(MappingTableTest, MapsOnlyInsideAReservation) {
  EXPECT_TRUE(table_.can_map(kBase, 8 * kGranule));
  EXPECT_FALSE(table_.can_map(kBase - kGranule, kGranule));
  EXPECT_FALSE(table_.can_map(kBase + 7 * kGranule, 2 * kGranule));
  EXPECT_FALSE(table_.can_map(kBase + 8 * kGranule, kGranule));
  EXPECT_FALSE(table_.can_map(kBase, 0));
  EXPECT_FALSE(table_.can_map(kBase + kGranule, static_cast<std::size_t>(-1)));
}

TEST_F(MappingTableTest, RefusesOverlaps) {
  table_.add_mapping(kBase + 2 * kGranule, 2 * kGranule, 1);
  EXPECT_EQ(table_.chunk_at(kBase + 2 * kGranule), 1U);
  EXPECT_FALSE(table_.can_map(kBase + 2 * kGranule, kGranule));
  EXPECT_FALSE(table_.can_map(kBase + 3 * kGranule, kGranule));
  EXPECT_FALSE(table_.can_map(kBase + kGranule, 2 * kGranule));
  EXPECT_FALSE(table_.can_map(kBase, 8 * kGranule));
  EXPECT_TRUE(table_.can_map(kBase, 2 * kGranule));
  EXPECT_TRUE(table_.can_map(kBase + 4 * kGranule, 4 * kGranule));
}

TEST_F(MappingTableTest, UnmapRemovesWholeMappingsOnly) {
  table_.add_mapping(kBase, 2 * kGranule, 1);
  table_.add_mapping(kBase + 4 * kGranule, kGranule, 2);
  EXPECT_FALSE(table_.remove_mappings(kBase, kGranule));
  EXPECT_FALSE(table_.remove_mappings(kBase + kGranule, 4 * kGranule));
  EXPECT_FALSE(table_.remove_mappings(kBase, 9 * kGranule));
  EXPECT_EQ(table_.mapping_count(), 2U);
  EXPECT_TRUE(table_.remove_mappings(kBase + 3 * kGranule, 5 * kGranule));
  EXPECT_EQ(table_.mapping_count(), 1U);
  EXPECT_EQ(table_.chunk_at(kBase + 4 * kGranule), 0U);
  EXPECT_TRUE(table_.remove_mappings(kBase, 2 * kGranule));
  EXPECT_EQ(table_.mapping_count(), 0U);
}

TEST_F(MappingTableTest, RemovingAReservationDropsItsMappings) {
  table_.add_reservation(kBase + 16 * kGranule, kGranule);
  table_.add_mapping(kBase + kGranule, kGranule, 1);
  table_.add_mapping(kBase + 16 * kGranule, kGranule, 2);
  EXPECT_FALSE(table_.remove_reservation(kBase, 4 * kGranule));
  EXPECT_FALSE(table_.remove_reservation(kBase + kGranule, 7 * kGranule));
  EXPECT_TRUE(table_.remove_reservation(kBase, 8 * kGranule));
  EXPECT_EQ(table_.mapping_count(), 1U);
  EXPECT_EQ(table_.chunk_at(kBase + 16 * kGranule), 2U);
  EXPECT_FALSE(table_.can_map(kBase, kGranule));
  EXPECT_EQ(table_.reservations().size(), 1U);
}

}  // namespace
}  // namespace npumem
