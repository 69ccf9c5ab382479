// The out-of-memory text's advice: it names the cause a user can act on (a request
// larger than anything may hold, a quota, another model's pool), not a generic one.
#include "core/oom_report.h"

#include <gtest/gtest.h>

#include "npumem/units.h"

namespace npumem::core {
namespace {

OomContext context_of(std::uint64_t rounded, std::uint64_t hbm_limit, std::uint64_t ddr_limit) {
  OomContext c;
  c.requested_bytes = c.rounded_bytes = rounded;
  c.pool = "default";
  c.strategy = "caching";
  TierMemory& hbm = c.tiers[static_cast<int>(Tier::hbm)];
  hbm.present = true;
  hbm.capacity_bytes = hbm.limit_bytes = hbm_limit;
  TierMemory& ddr = c.tiers[static_cast<int>(Tier::ddr)];
  ddr.present = ddr_limit != 0;
  ddr.capacity_bytes = ddr.limit_bytes = ddr_limit;
  return c;
}

std::string advice_of(const OomContext& c) {
  const std::string text = explain_out_of_memory(c);
  return text.substr(text.find("Advice:"));
}

// Live tensors past the device: the advice says by how much, and names the PyTorch calls
// beside the planners' commands.
TEST(OomReport, LiveTensorsPastTheDeviceSayByHowMuch) {
  OomContext c = context_of(300 * MiB, 1 * GiB, 0);
  TierMemory& hbm = c.tiers[static_cast<int>(Tier::hbm)];
  hbm.reserved_bytes = hbm.allocated_bytes = 900 * MiB;
  EXPECT_EQ(advice_of(c),
            "Advice: the live tensors need more than the device holds (900 MiB live and this "
            "request need 176 MiB more than the 1.00 GiB it may hold); reduce the batch size, "
            "shard the model (npumem.torch.shard in PyTorch, npumem plan shard for a model "
            "description) or recompute activations (npumem.torch.checkpoint, npumem plan "
            "recompute).");
}

TEST(OomReport, ARequestLargerThanEveryTierSaysSoAloneAndNotThatTensorsLive) {
  const OomContext c = context_of(4 * GiB, 1 * GiB, 2 * GiB);
  EXPECT_EQ(advice_of(c),
            "Advice: the request alone (4.00 GiB) is more than any tier may hold (hbm limit "
            "1.00 GiB, ddr limit 2.00 GiB); split the tensor, or use a device with more memory.");
}

TEST(OomReport, ALimitBelowTheCapacityIsTheOneToRaise) {
  OomContext c = context_of(300 * MiB, 1 * GiB, 0);
  c.tiers[static_cast<int>(Tier::hbm)].limit_bytes = 100 * MiB;
  EXPECT_EQ(advice_of(c),
            "Advice: the request alone (300 MiB) is more than any tier may hold (hbm limit "
            "100 MiB (of 1.00 GiB)); raise the limit (hbm:/ddr: in the config, or the memory "
            "fraction) or split the tensor.");
}

TEST(OomReport, ARequestLargerThanItsPinnedTierSaysSo) {
  OomContext c = context_of(300 * MiB, 1 * GiB, 256 * MiB);
  c.pool = "weights";
  c.pinned_tier = Tier::ddr;
  EXPECT_NE(advice_of(c).find("the request alone (300 MiB) is more than pool 'weights', pinned "
                              "to ddr, may hold there (ddr limit 256 MiB)"),
            std::string::npos)
      << advice_of(c);
}

TEST(OomReport, ARequestLargerThanTheQuotaSaysSoAndNotThatTheQuotaIsSpent) {
  OomContext c = context_of(301 * MiB, 1 * GiB, 0);
  c.pool = "c";
  c.pool_quota_bytes = 300 * MiB;
  c.quota_refused = true;
  EXPECT_EQ(advice_of(c),
            "Advice: the request alone (301 MiB) is more than the quota of pool 'c' (300 MiB); "
            "raise the quota above it.");
}

TEST(OomReport, AQuotaThatStopsGrowthShowsWhatThePoolReservesAndKeepsFree) {
  OomContext c = context_of(12 * MiB, 1 * GiB, 0);
  c.pool = "m";
  c.pool_quota_bytes = 20 * MiB;
  c.pool_reserved_bytes = 16 * MiB;
  c.pool_allocated_bytes = 8 * MiB;
  c.quota_refused = true;
  const std::string advice = advice_of(c);
  EXPECT_NE(advice.find("the quota of pool 'm' stops its growth: it reserves 16.0 MiB of 20.0 MiB "
                        "(8.00 MiB allocated; a quota counts reserved bytes, whole segments)"),
            std::string::npos)
      << advice;
  EXPECT_NE(advice.find("8.00 MiB of it is free in segments that live tensors keep"),
            std::string::npos)
      << advice;
  // A small tensor beside free large segments: it needs a segment of its own kind.
  c.rounded_bytes = c.requested_bytes = 8 * KiB;
  c.small_segment_bytes = 2 * MiB;
  EXPECT_NE(advice_of(c).find("a request this small grows by a segment of its own for small "
                              "tensors, 2.00 MiB, which free space in large segments does not "
                              "stand in for"),
            std::string::npos)
      << advice_of(c);
}

// Live tensors and the request together pass the quota: no packing makes them fit, so
// the advice says by how much the quota falls short, not that free space is scattered.
TEST(OomReport, TensorsThatCannotFitTheQuotaHoweverPackedSayByHowMuch) {
  OomContext c = context_of(3 * MiB, 1 * GiB, 0);
  c.pool = "modelB";
  c.pool_quota_bytes = 8 * MiB;
  c.pool_reserved_bytes = 8 * MiB;
  c.pool_allocated_bytes = 6 * MiB;
  c.quota_refused = true;
  EXPECT_EQ(advice_of(c),
            "Advice: pool 'modelB' needs 9.00 MiB (6.00 MiB allocated and 3.00 MiB requested), "
            "more than its quota of 8.00 MiB however tightly they are packed; raise the quota to "
            "9.00 MiB at least (in whole segments), or free its tensors.");
  // The growth refused known: the quota that serves it, not the floor (a quota of the
  // 8.01 MiB advised still failed, in whole granules).
  c.pool_quota_needed_bytes = 12 * MiB;
  EXPECT_EQ(advice_of(c),
            "Advice: pool 'modelB' needs 9.00 MiB (6.00 MiB allocated and 3.00 MiB requested), "
            "more than its quota of 8.00 MiB however tightly they are packed; with what it "
            "reserves now, this request needs a quota of 12.0 MiB (8.00 MiB reserved and "
            "4.00 MiB more); raise the quota to that, or free its tensors.");
  // A figure its short form rounds comes with its bytes.
  c.pool_quota_needed_bytes = 10 * MiB + 4 * KiB;
  EXPECT_NE(advice_of(c).find("a quota of 10.0 MiB (10489856 bytes)"), std::string::npos)
      << advice_of(c);
}

// Multi-model serving: the pool that failed holds nothing; another model's holds the
// device. The text lists the pools and the advice names the one that holds most, and
// quotas that together pass what the device may hold.
TEST(OomReport, AnotherModelsPoolHoldingTheDeviceIsNamed) {
  OomContext c = context_of(30 * MiB, 100 * MiB, 0);
  TierMemory& hbm = c.tiers[static_cast<int>(Tier::hbm)];
  hbm.reserved_bytes = hbm.allocated_bytes = 90 * MiB;
  c.pool = "model_b";
  c.pool_quota_bytes = 50 * MiB;
  c.pools = {{"model_a", 200 * MiB, 90 * MiB, 90 * MiB}, {"model_b", 50 * MiB, 0, 0}};
  const std::string text = explain_out_of_memory(c);
  EXPECT_NE(text.find("  model_a                   200 MiB     90.0 MiB     90.0 MiB\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(advice_of(c),
            "Advice: the live tensors of all pools need more than the device holds: other pools "
            "reserve 90.0 MiB (most: 'model_a', 90.0 MiB); the pools' quotas add up to 250 MiB, "
            "more than the tiers may hold (100 MiB); free their tensors or lower their quotas, "
            "or reduce this model's batch size.");
  // A pool without a quota has none to lower: give it one.
  std::vector<PoolMemory> unbounded = c.pools;
  unbounded[0].quota_bytes = 0;
  std::swap(c.pools, unbounded);
  EXPECT_NE(advice_of(c).find("free their tensors or give them quotas (create_pool(name, "
                              "quota)), or reduce"),
            std::string::npos)
      << advice_of(c);
  std::swap(c.pools, unbounded);
  c.pools.insert(c.pools.begin(), {"default", 0, 0, 0});  // as the allocator lists it
  EXPECT_NE(advice_of(c).find("quotas add up to 250 MiB"), std::string::npos)
      << "an empty pool without a quota takes nothing";
  c.pools.front().reserved_bytes = 2 * MiB;
  EXPECT_EQ(advice_of(c).find("quotas add up"), std::string::npos)
      << "a pool without a quota holding memory: no sum of quotas bounds the pools";
}

// The pool table pads names by display columns: a pool named in Chinese (two columns a
// character, three bytes) lines up with the others.
TEST(OomReport, ThePoolTableAlignsWideNames) {
  OomContext c = context_of(30 * MiB, 100 * MiB, 0);
  c.pools = {{"model_a", 200 * MiB, 90 * MiB, 90 * MiB}, {"模型乙", 50 * MiB, 0, 0}};
  const std::string text = explain_out_of_memory(c);
  EXPECT_NE(text.find("  model_a                   200 MiB"), std::string::npos) << text;
  EXPECT_NE(text.find("  模型乙                   50.0 MiB"), std::string::npos) << text;
}

// A name longer than the column widens it for every row: the figures stay in line.
TEST(OomReport, ThePoolTableWidensForALongName) {
  OomContext c = context_of(30 * MiB, 100 * MiB, 0);
  c.pools = {{"default", 0, 90 * MiB, 90 * MiB}, {"npumem.checkpoint.gradients", 50 * MiB, 0, 0}};
  const std::string text = explain_out_of_memory(c);
  EXPECT_NE(text.find("  pool                               quota     reserved    allocated\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  default                             none     90.0 MiB     90.0 MiB\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  npumem.checkpoint.gradients     50.0 MiB          0 B          0 B\n"),
            std::string::npos)
      << text;
}

TEST(OomReport, APinnedPoolSaysWhatItsTierHoldsAndWho) {
  OomContext c = context_of(30 * MiB, 100 * MiB, 1 * GiB);
  TierMemory& hbm = c.tiers[static_cast<int>(Tier::hbm)];
  hbm.reserved_bytes = hbm.allocated_bytes = 90 * MiB;
  c.pool = "h";
  c.pinned_tier = Tier::hbm;
  c.pools = {{"a", 150 * MiB, 150 * MiB, 150 * MiB, {80 * MiB, 70 * MiB}},
             {"b", 0, 40 * MiB, 40 * MiB, {0, 40 * MiB}},
             {"h", 0, 10 * MiB, 10 * MiB, {10 * MiB, 0}}};
  EXPECT_EQ(advice_of(c),
            "Advice: pool 'h' is pinned to hbm, where 90.0 MiB of its 100 MiB limit is "
            "reserved; other pools reserve 80.0 MiB of it (most: 'a', 80.0 MiB); free tensors "
            "there or raise the tier's limit (hbm:/ddr:).");
}

// The other pools hold DDR only, and the pinned tier's memory is cached free where the
// request cannot use it (a small request beside large free blocks): the advice blamed
// the DDR pools, freeing which changes nothing, and said nothing of the free memory.
TEST(OomReport, APinnedPoolsAdviceCountsItsTierOnlyAndNamesItsFreeCache) {
  OomContext c = context_of(512 * KiB, 16 * MiB, 256 * MiB);
  TierMemory& hbm = c.tiers[static_cast<int>(Tier::hbm)];
  hbm.reserved_bytes = 16 * MiB;
  hbm.allocated_bytes = 2 * MiB;
  hbm.free_cached_bytes = 14 * MiB;
  hbm.largest_free_bytes = 12 * MiB;
  c.pool = "h";
  c.pinned_tier = Tier::hbm;
  c.pools = {{"big_ddr", 0, 90 * MiB, 90 * MiB, {0, 90 * MiB}},
             {"h", 0, 16 * MiB, 2 * MiB, {16 * MiB, 0}}};
  EXPECT_EQ(advice_of(c),
            "Advice: pool 'h' is pinned to hbm, where 16.0 MiB of its 16.0 MiB limit is "
            "reserved; 14.0 MiB of it is cached free where this request cannot go (in "
            "segments that live blocks hold, or of the other size class): try "
            "expandable_segments:true, which maps free memory for any request, or empty the "
            "cache (empty_cache) between phases; else free tensors there or raise the tier's "
            "limit (hbm:/ddr:).");
}

// The static arena with room enough, but in pieces: "full" sent the user to count live
// tensors that did not fill it.
TEST(OomReport, AFragmentedStaticArenaIsCalledFragmentedNotFull) {
  OomContext c = context_of(9 * MiB, 960 * MiB, 0);
  c.strategy = "static";
  c.arena_exhausted = true;
  TierMemory& hbm = c.tiers[static_cast<int>(Tier::hbm)];
  hbm.reserved_bytes = 900 * MiB;
  hbm.allocated_bytes = 876 * MiB;
  hbm.free_cached_bytes = 24 * MiB;
  hbm.largest_free_bytes = 2 * MiB;
  EXPECT_EQ(advice_of(c),
            "Advice: the static arena has 24.0 MiB free, but in pieces (the largest 2.00 MiB) "
            "too small for this request; raise static_size (npumem replay --advise measures it) "
            "or allow static_fallback:true.");
  hbm.free_cached_bytes = 4 * MiB;
  EXPECT_EQ(advice_of(c),
            "Advice: the static arena (900 MiB) has 4.00 MiB free beside its live tensors, "
            "5.00 MiB short of this request; raise static_size to 905 MiB at least (npumem "
            "replay --advise measures what the workload needs) or allow static_fallback:true.");
  // 15.99 MiB free for a 16 MiB request was called full, beside "free 16.0 MiB".
  c.rounded_bytes = c.requested_bytes = 16 * MiB;
  hbm.reserved_bytes = 20 * MiB;
  hbm.free_cached_bytes = hbm.largest_free_bytes = 16 * MiB - 8 * KiB;
  EXPECT_NE(advice_of(c).find("8.00 KiB short of this request; raise static_size to 20.0 MiB "
                              "(20979712 bytes) at least"),
            std::string::npos)
      << advice_of(c);
  hbm.free_cached_bytes = 0;
  EXPECT_EQ(advice_of(c),
            "Advice: the static arena is full; raise static_size (npumem replay --advise "
            "measures it) or allow static_fallback:true.");
}

// With spilling off, fragmentation in HBM is advice, and DDR's room the quicker way out.
TEST(OomReport, SpillingOffNamesDdrsRoomBesideOtherAdvice) {
  OomContext c = context_of(16 * MiB, 64 * MiB, 2 * GiB);
  c.spill_to_ddr = false;
  TierMemory& hbm = c.tiers[static_cast<int>(Tier::hbm)];
  hbm.reserved_bytes = 64 * MiB;
  hbm.allocated_bytes = 32 * MiB;
  hbm.free_cached_bytes = 32 * MiB;
  hbm.largest_free_bytes = 4 * MiB;
  EXPECT_EQ(advice_of(c),
            "Advice: enough memory is free but fragmented; try expandable_segments:true, or "
            "max_split_size to keep large cached blocks whole. Or: DDR has room; "
            "spill_to_ddr:true would place this request there.");
  hbm.free_cached_bytes = hbm.largest_free_bytes = 0;
  hbm.allocated_bytes = 64 * MiB;
  EXPECT_EQ(advice_of(c), "Advice: DDR has room; allow spilling with spill_to_ddr:true.");
}

// max_split_size set already, and still fragmented: the advice names only what is left
// (a cold trial set it at 21 and 64 MiB and was told to set it, every time).
TEST(OomReport, FragmentedWithMaxSplitSizeSetAdvisesOnlyExpandable) {
  OomContext c = context_of(9 * MiB, 256 * MiB, 0);
  c.max_split_size_set = true;
  TierMemory& hbm = c.tiers[static_cast<int>(Tier::hbm)];
  hbm.reserved_bytes = 200 * MiB;
  hbm.allocated_bytes = 100 * MiB;
  hbm.free_cached_bytes = 100 * MiB;
  hbm.largest_free_bytes = 4 * MiB;
  EXPECT_EQ(advice_of(c),
            "Advice: enough memory is free but fragmented; try expandable_segments:true "
            "(max_split_size is set already).");
}

// One pool whose free memory, less than the request, lies between live blocks: said to
// be fragmented, with the largest piece, not blamed on other pools or size classes.
TEST(OomReport, OnePoolsFreeMemoryBetweenLiveBlocksIsCalledFragmented) {
  OomContext c = context_of(100 * MiB, 256 * MiB, 0);
  TierMemory& hbm = c.tiers[static_cast<int>(Tier::hbm)];
  hbm.reserved_bytes = 204 * MiB;
  hbm.allocated_bytes = 112 * MiB;
  hbm.free_cached_bytes = 92 * MiB;
  hbm.largest_free_bytes = 10 * MiB;
  EXPECT_EQ(advice_of(c),
            "Advice: the live tensors and this request fit within the limit, but the 92.0 MiB "
            "cached free is fragmented: in pieces (the largest 10.0 MiB) in segments that live "
            "blocks keep from being released (of this size class or the other: small or large "
            "pool), and this request's new segment does not fit beside them; try "
            "expandable_segments:true, or free those tensors.");
}

// Fragmented and nearly full: the settings it names would only move the error when the
// workload needs more later, which the advice says (a step needing 180 MiB on 150).
TEST(OomReport, FragmentedAndNearlyFullSaysMoreMemoryMayBeNeeded) {
  OomContext c = context_of(9 * MiB, 150 * MiB, 0);
  TierMemory& hbm = c.tiers[static_cast<int>(Tier::hbm)];
  hbm.reserved_bytes = 150 * MiB;
  hbm.allocated_bytes = 138 * MiB;
  hbm.free_cached_bytes = 12 * MiB;
  hbm.largest_free_bytes = 4 * MiB;
  const std::string advice = advice_of(c);
  EXPECT_NE(advice.find("fragmented; try expandable_segments:true"), std::string::npos) << advice;
  EXPECT_NE(advice.find("The live tensors and this request take 147 MiB of the 150 MiB limit "
                        "already: if the workload needs more later, only more memory helps"),
            std::string::npos)
      << advice;
}

// 5 MiB live and 2.5 MiB asked fit on 8 MiB, but 6 MiB reserved in whole segments
// strands the rest: not "the live tensors need more than the device holds".
TEST(OomReport, RoomStrandedByReservedSegmentsIsNotBlamedOnTheLiveTensors) {
  OomContext c = context_of(5 * MiB / 2, 8 * MiB, 0);
  TierMemory& hbm = c.tiers[static_cast<int>(Tier::hbm)];
  hbm.reserved_bytes = 6 * MiB;
  hbm.allocated_bytes = 5 * MiB;
  hbm.free_cached_bytes = hbm.largest_free_bytes = 1 * MiB;
  const std::string advice = advice_of(c);
  EXPECT_NE(advice.find("the live tensors and this request fit within the limit"),
            std::string::npos)
      << advice;
  EXPECT_NE(advice.find("expandable_segments:true"), std::string::npos) << advice;
}

// Expandable maps whole granules: 4.5 MiB live and 2 MiB asked fit 7 MiB in bytes, not
// in the 3 granules of 2 MiB it holds (a cold trial was told the device had refused).
TEST(OomReport, ALimitThatHoldsTooFewGranulesSaysHowMany) {
  OomContext c = context_of(2 * MiB, 7 * MiB, 0);
  c.strategy = "expandable";
  c.granule_setting = "expandable_large_granule";
  TierMemory& hbm = c.tiers[static_cast<int>(Tier::hbm)];
  hbm.granule_bytes = 2 * MiB;
  hbm.reserved_bytes = 6 * MiB;
  hbm.allocated_bytes = 9 * MiB / 2;
  hbm.free_cached_bytes = hbm.largest_free_bytes = 3 * MiB / 2;
  EXPECT_EQ(advice_of(c),
            "Advice: memory is mapped in whole granules, and the hbm limit 7.00 MiB holds 3 "
            "granules of 2.00 MiB (expandable_large_granule); the live tensors (4.50 MiB) and "
            "this request need 4 however tightly packed. Raise the limit to 8.00 MiB, or use "
            "smaller granules.");
}

// Room in granules, but not as the live blocks lie: the granules the request would map
// pass the limit (a cold trial, 13 MiB: 8 MiB mapped, a 4.9 MiB request).
TEST(OomReport, GranulesTheLiveBlocksStrandSayWhereTheFreeSpaceIs) {
  OomContext c = context_of(5120000, 13 * MiB, 0);
  c.strategy = "expandable";
  c.granule_setting = "expandable_large_granule";
  TierMemory& hbm = c.tiers[static_cast<int>(Tier::hbm)];
  hbm.granule_bytes = 2 * MiB;
  hbm.reserved_bytes = 8 * MiB;
  hbm.allocated_bytes = 4865000;
  hbm.free_cached_bytes = hbm.reserved_bytes - hbm.allocated_bytes;
  hbm.largest_free_bytes = 2453000;
  const std::string advice = advice_of(c);
  EXPECT_NE(advice.find("would fit in 5 of the 6 granules of 2.00 MiB"), std::string::npos)
      << advice;
  EXPECT_NE(advice.find("the largest free block is 2.34 MiB"), std::string::npos) << advice;
  EXPECT_EQ(advice.find("device refused"), std::string::npos) << advice;
}

TEST(OomReport, ARequestPastAnyBlockIsNotBlamedOnTheDevice) {
  OomContext c = context_of(std::uint64_t{1} << 63, ~std::uint64_t{0}, 0);
  c.past_largest_block = true;
  c.device_error = "refused";
  EXPECT_EQ(advice_of(c), "Advice: no block can hold the request (8.00 EiB); split the tensor.");
}

// 12 MiB live on 8 + 8 MiB and 3 MiB asked: the device holds it, no tier does.
TEST(OomReport, RoomSplitBetweenTiersIsNamedAsSuch) {
  OomContext c = context_of(3 * MiB, 8 * MiB, 8 * MiB);
  for (TierMemory& t : c.tiers) t.reserved_bytes = t.allocated_bytes = 6 * MiB;
  EXPECT_EQ(advice_of(c),
            "Advice: the live tensors and this request fit within the tiers together, but no "
            "one tier has room for the request (hbm 2.00 MiB, ddr 2.00 MiB beside the live "
            "tensors) and a tensor is not split across tiers; free tensors, or reduce the "
            "batch size.");
}

TEST(OomReport, ManyPoolsAreCountedPastTheListed) {
  OomContext c = context_of(30 * MiB, 100 * MiB, 0);
  for (int i = 0; i < 20; ++i) c.pools.push_back({"p" + std::to_string(i), 0, 0, 0});
  EXPECT_NE(explain_out_of_memory(c).find("  and 4 more\n"), std::string::npos);
}

}  // namespace
}  // namespace npumem::core
