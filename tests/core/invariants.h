// Checks an allocator's whole state against its snapshot: segments disjoint, blocks
// tiling each segment exactly, free neighbours coalesced, statistics (inactive split
// blocks too) equal to a recount.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "npumem/allocator.h"

namespace npumem::testing {

// live: pointer -> requested bytes of every allocation the test holds.
inline void expect_consistent(const Allocator& allocator,
                              const std::map<void*, std::size_t>& live) {
  const std::vector<SegmentInfo> segments = allocator.snapshot();
  const Stats stats = allocator.stats();
  std::int64_t reserved = 0, allocated = 0, requested = 0, blocks_allocated = 0;
  std::int64_t inactive_split = 0, inactive_split_bytes = 0;
  std::uint64_t previous_end = 0;
  std::map<std::uint64_t, std::uint64_t> allocated_blocks;
  for (const SegmentInfo& segment : segments) {
    ASSERT_GE(segment.address, previous_end) << "segments overlap";
    previous_end = segment.address + segment.size;
    std::uint64_t cursor = segment.address;
    const BlockInfo* previous = nullptr;
    for (const BlockInfo& block : segment.blocks) {
      ASSERT_EQ(block.address, cursor) << "blocks do not tile the segment";
      ASSERT_GT(block.size, 0u);
      cursor += block.size;
      if (block.mapped) reserved += static_cast<std::int64_t>(block.size);
      if (block.mapped && !block.allocated && segment.blocks.size() > 1) {
        ++inactive_split;
        inactive_split_bytes += static_cast<std::int64_t>(block.size);
      }
      ASSERT_TRUE(block.mapped || !block.allocated) << "an allocated block is unmapped";
      if (block.allocated) {
        allocated += static_cast<std::int64_t>(block.size);
        requested += static_cast<std::int64_t>(block.requested_bytes);
        ++blocks_allocated;
        allocated_blocks[block.address] = block.requested_bytes;
      } else if (previous != nullptr && !previous->allocated) {
        ASSERT_NE(previous->mapped, block.mapped) << "two free neighbours were not coalesced";
      }
      previous = &block;
    }
    ASSERT_EQ(cursor, segment.address + segment.size) << "blocks do not cover the segment";
  }
  EXPECT_EQ(stats.reserved_bytes.all.current, reserved);
  EXPECT_EQ(stats.allocated_bytes.all.current, allocated);
  EXPECT_EQ(stats.requested_bytes.all.current, requested);
  EXPECT_EQ(stats.allocation.all.current, blocks_allocated);
  EXPECT_EQ(stats.segment.all.current, static_cast<std::int64_t>(segments.size()));
  EXPECT_EQ(stats.inactive_split.all.current, inactive_split);
  EXPECT_EQ(stats.inactive_split_bytes.all.current, inactive_split_bytes);
  ASSERT_EQ(allocated_blocks.size(), live.size());
  for (const auto& [ptr, bytes] : live) {
    const auto found = allocated_blocks.find(reinterpret_cast<std::uint64_t>(ptr));
    ASSERT_NE(found, allocated_blocks.end()) << "a live pointer has no allocated block";
    EXPECT_EQ(found->second, bytes);
  }
  for (const auto* split : {&stats.reserved_bytes, &stats.allocated_bytes}) {
    EXPECT_EQ(split->all.current, split->by_kind[0].current + split->by_kind[1].current);
    EXPECT_EQ(split->all.current, split->by_tier[0].current + split->by_tier[1].current);
  }
}

}  // namespace npumem::testing
