#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "device/shared_page.h"
#include "npumem/stats_page.h"
#include "npumem/units.h"

namespace npumem {
namespace {

std::string prefix() {
  return "npumem_test." + std::to_string(::getpid()) + ".reader.";
}

// A process id that no longer exists: a child that has exited and been reaped.
pid_t dead_pid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return child;
}

TEST(StatsPageReader, RemovesPagesOfDeadProcesses) {
  // A page whose name says it belongs to a dead process, never completed.
  const std::string stale = prefix() + std::to_string(dead_pid());
  { os::SharedPage::create(stale, 64); }
  ASSERT_TRUE(std::filesystem::exists("/dev/shm/" + stale));
  EXPECT_TRUE(read_stats_pages(prefix()).empty());
  EXPECT_FALSE(std::filesystem::exists("/dev/shm/" + stale));
}

TEST(StatsPageReader, SkipsPagesStillBeingCreated) {
  const std::string starting = prefix() + std::to_string(::getpid()) + ".starting";
  os::SharedPage page = os::SharedPage::create(starting, 8192);  // zeroes: no magic yet
  EXPECT_TRUE(read_stats_pages(prefix()).empty());
  EXPECT_TRUE(std::filesystem::exists("/dev/shm/" + starting));  // its owner lives
  os::remove_shared_page(starting);
}

TEST(StatsPageReader, RemovesCompletePagesOfAChildThatWasKilled) {
  const std::string name = prefix() + "child";
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    // The child publishes, says so, and dies without cleaning up.
    Allocator allocator(make_device("sim:hbm=64MiB,ddr=0"));
    void* p = allocator.allocate(3 * MiB);
    (void)p;
    StatsPublisher publisher({std::chrono::milliseconds(1000), name});
    const auto registration = publisher.publish(allocator);
    const char byte = 1;
    (void)!::write(ready[1], &byte, 1);
    ::pause();
    ::_exit(0);
  }
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  auto pages = read_stats_pages(prefix());
  ASSERT_EQ(pages.size(), 1u);
  EXPECT_EQ(pages[0].pid, child);
  EXPECT_EQ(pages[0].devices.at(0).tiers[0].allocated_bytes, 3 * MiB);

  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_TRUE(std::filesystem::exists("/dev/shm/" + name));
  EXPECT_TRUE(read_stats_pages(prefix()).empty());
  EXPECT_FALSE(std::filesystem::exists("/dev/shm/" + name));
  ::close(ready[0]);
  ::close(ready[1]);
}

}  // namespace
}  // namespace npumem
