#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "npumem/errors.h"
#include "npumem/stats_page.h"
#include "npumem/units.h"

namespace npumem {
namespace {

std::string prefix() {
  return "npumem_test." + std::to_string(::getpid()) + ".";
}

StatsPublisher::Options options(const char* what, int interval_ms = 10) {
  // Readers show a page only when its name carries its process's pid after the prefix.
  return {std::chrono::milliseconds(interval_ms),
          prefix() + std::to_string(::getpid()) + "." + what};
}

const ProcessStats* find_page(const std::vector<ProcessStats>& pages, const std::string& name) {
  for (const ProcessStats& page : pages) {
    if (page.page_name == name) return &page;
  }
  return nullptr;
}

TEST(StatsPublisher, PublishesRegisteredAllocatorsAndRemovesThePageAtTheEnd) {
  Allocator allocator(make_device("sim:hbm=64MiB,ddr=32MiB"));
  void* p = allocator.allocate(4 * MiB);
  std::string name;
  {
    StatsPublisher publisher(options("basic"));
    name = publisher.page_name();
    const auto registration = publisher.publish(allocator);
    const auto pages = read_stats_pages(prefix());
    const ProcessStats* page = find_page(pages, name);
    ASSERT_NE(page, nullptr);
    EXPECT_EQ(page->pid, ::getpid());
    EXPECT_FALSE(page->process_name.empty());
    EXPECT_GE(page->update_count, 1u);
    EXPECT_GT(page->updated_unix_ns, 0);
    ASSERT_EQ(page->devices.size(), 1u);
    const PublishedDevice& device = page->devices[0];
    EXPECT_EQ(device.name, "sim:0");
    const PublishedTier& hbm = device.tiers[0];
    EXPECT_TRUE(hbm.present);
    EXPECT_EQ(hbm.capacity_bytes, 64 * MiB);
    EXPECT_EQ(hbm.allocated_bytes, 4 * MiB);
    EXPECT_EQ(hbm.reserved_bytes, 20 * MiB);
    EXPECT_EQ(hbm.peak_allocated_bytes, 4 * MiB);
    EXPECT_EQ(device.peak_allocated_bytes, 4 * MiB);
    EXPECT_EQ(device.peak_reserved_bytes, 20 * MiB);
    EXPECT_EQ(device.tiers[1].capacity_bytes, 32 * MiB);
    EXPECT_EQ(device.tiers[1].allocated_bytes, 0u);
  }
  EXPECT_FALSE(std::filesystem::exists("/dev/shm/" + name));
  allocator.deallocate(p);
}

// A server of several models reads each model's pool from outside the process.
TEST(StatsPublisher, PublishesEachPoolsFigures) {
  Allocator allocator(make_device("sim:hbm=256MiB,ddr=0"));
  allocator.create_pool("encoder", 64 * MiB);
  allocator.create_pool("kv");
  void* in_encoder = nullptr;
  {
    PoolScope scope(allocator, "encoder");
    in_encoder = allocator.allocate(3 * MiB);
  }
  void* in_default = allocator.allocate(1 * MiB);
  StatsPublisher publisher(options("pools", 1000));
  const auto registration = publisher.publish(allocator);
  const auto pages = read_stats_pages(prefix());
  const ProcessStats* page = find_page(pages, publisher.page_name());
  ASSERT_NE(page, nullptr);
  const PublishedDevice& device = page->devices.at(0);
  EXPECT_EQ(device.pool_count, 3u);
  ASSERT_EQ(device.pools.size(), 3u);
  EXPECT_EQ(device.pools[0].name, "default");
  EXPECT_EQ(device.pools[0].allocated_bytes, 1 * MiB);
  EXPECT_EQ(device.pools[1].name, "encoder");
  EXPECT_EQ(device.pools[1].quota_bytes, 64 * MiB);
  EXPECT_EQ(device.pools[1].allocated_bytes, 3 * MiB);
  EXPECT_EQ(device.pools[1].peak_allocated_bytes, 3 * MiB);
  EXPECT_EQ(device.pools[1].reserved_bytes,
            static_cast<std::uint64_t>(allocator.pools()[1].stats.reserved_bytes.all.current));
  EXPECT_GE(device.pools[1].reserved_bytes, 3 * MiB);
  EXPECT_EQ(device.pools[2].name, "kv");
  EXPECT_EQ(device.pools[2].reserved_bytes, 0u);
  EXPECT_EQ(device.pools[2].quota_bytes, 0u);
  allocator.deallocate(in_encoder);
  allocator.deallocate(in_default);
}

// Past the page's room for pools, the first ones are shown and the count says how many there are.
TEST(StatsPublisher, ManyPoolsAreCountedBeyondThoseShown) {
  Allocator allocator(make_device("sim:hbm=256MiB,ddr=0"));
  for (int i = 0; i < 11; ++i) allocator.create_pool("model" + std::to_string(i));
  StatsPublisher publisher(options("many_pools", 1000));
  const auto registration = publisher.publish(allocator);
  const auto pages = read_stats_pages(prefix());
  const ProcessStats* page = find_page(pages, publisher.page_name());
  ASSERT_NE(page, nullptr);
  EXPECT_EQ(page->devices.at(0).pool_count, 12u);
  EXPECT_EQ(page->devices.at(0).pools.size(), 8u);
}

TEST(StatsPublisher, TheTimerCarriesNewFigures) {
  Allocator allocator(make_device("sim:hbm=64MiB,ddr=0"));
  StatsPublisher publisher(options("timer"));
  const auto registration = publisher.publish(allocator);
  void* p = allocator.allocate(6 * MiB);
  std::uint64_t seen = 0;
  for (int i = 0; i < 500 && seen != 6 * MiB; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    const auto pages = read_stats_pages(prefix());
    const ProcessStats* page = find_page(pages, publisher.page_name());
    ASSERT_NE(page, nullptr);
    seen = page->devices.at(0).tiers[0].allocated_bytes;
  }
  EXPECT_EQ(seen, 6 * MiB);
  allocator.deallocate(p);
}

TEST(StatsPublisher, EndedRegistrationsLeaveThePage) {
  Allocator first(make_device("sim:hbm=64MiB,ddr=0"));
  Allocator second(make_device("sim:id=1,hbm=64MiB,ddr=0"));
  StatsPublisher publisher(options("two", 1000));
  auto keep = publisher.publish(first);
  {
    const auto temporary = publisher.publish(second);
    const auto pages = read_stats_pages(prefix());
    ASSERT_EQ(find_page(pages, publisher.page_name())->devices.size(), 2u);
    EXPECT_EQ(find_page(pages, publisher.page_name())->devices[1].name, "sim:1");
  }
  const auto pages = read_stats_pages(prefix());
  const ProcessStats* page = find_page(pages, publisher.page_name());
  ASSERT_EQ(page->devices.size(), 1u);
  EXPECT_EQ(page->devices[0].name, "sim:0");
}

// A finished replay held open (--hold) after its report: the allocator is gone, its
// last figures stay on the page, through the timer's ticks, until the registration ends.
TEST(StatsPublisher, AFrozenRegistrationKeepsItsLastFiguresAfterTheAllocator) {
  StatsPublisher publisher(options("frozen", 1));
  StatsPublisher::Registration registration;
  {
    Allocator allocator(make_device("sim:hbm=64MiB,ddr=0"));
    void* p = allocator.allocate(4 * MiB);
    registration = publisher.publish(allocator);
    registration.freeze();
    allocator.deallocate(p);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // ticks of 1 ms
  const auto pages = read_stats_pages(prefix());
  const ProcessStats* page = find_page(pages, publisher.page_name());
  ASSERT_NE(page, nullptr);
  ASSERT_EQ(page->devices.size(), 1u);
  EXPECT_EQ(page->devices[0].tiers[0].allocated_bytes, 4 * MiB);
  registration = {};
  EXPECT_TRUE(find_page(read_stats_pages(prefix()), publisher.page_name())->devices.empty());
}

TEST(StatsPublisher, AtMostEightAllocatorsPerPage) {
  std::vector<std::unique_ptr<Allocator>> allocators;
  StatsPublisher publisher(options("full", 1000));
  std::vector<StatsPublisher::Registration> registrations;
  for (int i = 0; i < 8; ++i) {
    allocators.push_back(std::make_unique<Allocator>(make_device("sim:hbm=64MiB,ddr=0")));
    registrations.push_back(publisher.publish(*allocators.back()));
  }
  Allocator ninth(make_device("sim:hbm=64MiB,ddr=0"));
  EXPECT_THROW((void)publisher.publish(ninth), Error);
}

TEST(StatsPublisher, RejectsANonPositiveInterval) {
  EXPECT_THROW(StatsPublisher(options("zero", 0)), ConfigError);
}

TEST(StatsPublisher, DefaultPageNamesCarryThePidAndAreNotPredictable) {
  const std::string prefix = "npumem." + std::to_string(::getpid()) + ".";
  EXPECT_EQ(stats_page_prefix_of_this_process(), prefix);
  // Someone who plants the name "npumem.<pid>" first no longer stops publishing.
  const std::string planted = "/dev/shm/npumem." + std::to_string(::getpid());
  { std::ofstream(planted) << "planted"; }
  {
    StatsPublisher first;
    StatsPublisher second;
    EXPECT_TRUE(first.page_name().starts_with(prefix)) << first.page_name();
    EXPECT_GT(first.page_name().size(), prefix.size());
    EXPECT_NE(first.page_name(), second.page_name());
    EXPECT_TRUE(std::filesystem::exists("/dev/shm/" + first.page_name()));
  }
  std::filesystem::remove(planted);
}

TEST(StatsPublisher, TheSettingTellsAnUnrecognisedWordFromOnAndOff) {
  const auto setting_of = [](const char* value) {
    ::setenv(kStatsPageVariable, value, 1);
    const StatsPageSetting setting = stats_page_setting();
    ::unsetenv(kStatsPageVariable);
    return setting;
  };
  EXPECT_EQ(stats_page_setting(), StatsPageSetting::on);
  EXPECT_EQ(setting_of("OFF"), StatsPageSetting::off);
  EXPECT_EQ(setting_of("0"), StatsPageSetting::off);
  EXPECT_EQ(setting_of("Yes"), StatsPageSetting::on);
  // Taken as on without a word before.
  EXPECT_EQ(setting_of("bogus"), StatsPageSetting::unrecognised);
  EXPECT_EQ(setting_of(""), StatsPageSetting::on);
}

}  // namespace
}  // namespace npumem
