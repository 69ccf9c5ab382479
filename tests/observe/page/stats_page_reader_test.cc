#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <new>
#include <string_view>

#include "device/os/shared_page.h"
#include "npumem/stats_page.h"
#include "npumem/units.h"
#include "observe/page/stats_page_layout.h"

namespace npumem {
namespace {

using observe::StatsPageLayout;

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
  const std::string pages_prefix = prefix();
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  const std::string name = pages_prefix + std::to_string(child > 0 ? child : ::getpid());
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
  // Dead, not reaped yet (a worker whose parent has not waited): gone already.
  siginfo_t info{};
  ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOWAIT), 0);
  EXPECT_TRUE(std::filesystem::exists("/dev/shm/" + name));
  EXPECT_TRUE(read_stats_pages(prefix()).empty());
  EXPECT_FALSE(std::filesystem::exists("/dev/shm/" + name));
  int status = 0;
  ::waitpid(child, &status, 0);
  ::close(ready[0]);
  ::close(ready[1]);
}

// A page as another local user could write it: every field chosen by the writer.
struct PlantedPage {
  PlantedPage(const std::string& page_name, int pid_field)
      : name(page_name), page(os::SharedPage::create(page_name, sizeof(StatsPageLayout))) {
    layout = new (page.data()) StatsPageLayout{};
    layout->version = observe::kStatsPageVersion;
    layout->pid = pid_field;
    set_process_name("trainer");
    observe::PageDevice& device = layout->devices[0];
    device.in_use = 1;
    observe::store_text(device.name, "sim:0");
    observe::PageTier& hbm = device.tiers[0];
    hbm.present = 1;
    hbm.capacity_bytes = 64 * MiB;
    hbm.reserved_bytes = hbm.peak_reserved_bytes = 20 * MiB;
    hbm.allocated_bytes = hbm.peak_allocated_bytes = 4 * MiB;
    device.peak_reserved_bytes = 20 * MiB;
    device.peak_allocated_bytes = 4 * MiB;
    layout->updated_unix_ns = 1;
    layout->magic = observe::kStatsPageMagic;
  }
  ~PlantedPage() { os::remove_shared_page(name); }

  void set_process_name(std::string_view text) {
    layout->process_name.fill('\0');
    text.copy(layout->process_name.data(), layout->process_name.size() - 1);
  }
  bool exists() const { return std::filesystem::exists("/dev/shm/" + name); }

  std::string name;
  os::SharedPage page;
  StatsPageLayout* layout = nullptr;
};

std::string own_page_name() {
  return prefix() + std::to_string(::getpid()) + ".planted";
}

TEST(StatsPageReader, ShowsAPlausiblePageOfALiveProcess) {
  PlantedPage planted(own_page_name(), ::getpid());
  const auto pages = read_stats_pages(prefix());
  ASSERT_EQ(pages.size(), 1u);
  EXPECT_EQ(pages[0].process_name, "trainer");
  EXPECT_EQ(pages[0].devices.at(0).tiers[0].allocated_bytes, 4 * MiB);
}

TEST(StatsPageReader, PagesWithImpossibleFiguresAreNotShown) {
  PlantedPage planted(own_page_name(), ::getpid());
  observe::PageTier& hbm = planted.layout->devices[0].tiers[0];
  const auto shown = [] { return !read_stats_pages(prefix()).empty(); };
  hbm.allocated_bytes = hbm.peak_allocated_bytes = ~std::uint64_t{0};  // 16 EiB
  EXPECT_FALSE(shown());
  hbm.allocated_bytes = hbm.peak_allocated_bytes = 40 * MiB;  // more than is reserved
  EXPECT_FALSE(shown());
  hbm.allocated_bytes = hbm.peak_allocated_bytes = 4 * MiB;
  hbm.reserved_bytes = hbm.peak_reserved_bytes = 1 * GiB;  // more than the device holds
  EXPECT_FALSE(shown());
  hbm.reserved_bytes = hbm.peak_reserved_bytes = 20 * MiB;
  hbm.present = 7;
  EXPECT_FALSE(shown());
  hbm.present = 1;
  planted.layout->devices[0].num_ooms = ~std::uint64_t{0};
  EXPECT_FALSE(shown());
  planted.layout->devices[0].num_ooms = 0;
  planted.layout->devices[0].peak_allocated_bytes = 5 * MiB;  // above the tiers' peaks' sum
  EXPECT_FALSE(shown());
  planted.layout->devices[0].peak_allocated_bytes = 3 * MiB;  // below what a tier holds now
  EXPECT_FALSE(shown());
  planted.layout->devices[0].peak_allocated_bytes = 4 * MiB;
  EXPECT_TRUE(shown());
  EXPECT_TRUE(planted.exists());  // a bad page is skipped, not removed
}

TEST(StatsPageReader, NamesComeBackWithTerminalControlsEscaped) {
  PlantedPage planted(own_page_name(), ::getpid());
  planted.set_process_name("x\x1b[2J\x1b]0;owned\x07\xc2\x9b\xff\\y");
  observe::store_text(planted.layout->devices[0].name, "sim\x1b[31m:0");
  const auto pages = read_stats_pages(prefix());
  ASSERT_EQ(pages.size(), 1u);
  EXPECT_EQ(pages[0].process_name, "x\\x1b[2J\\x1b]0;owned\\x07\\xc2\\x9b\\xff\\x5cy");
  EXPECT_EQ(pages[0].devices.at(0).name, "sim\\x1b[31m:0");
}

TEST(StatsPageReader, APidFieldThatDisagreesWithTheNameHidesThePageButNeverRemovesIt) {
  // The page of this live process, its pid field saying a dead process owns it.
  PlantedPage planted(own_page_name(), dead_pid());
  EXPECT_TRUE(read_stats_pages(prefix()).empty());
  EXPECT_TRUE(planted.exists());
}

TEST(StatsPageReader, PagesOfAnotherUserAreNotShownForOurProcessesNorRemoved) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a page to another user";
  constexpr uid_t kOtherUser = 65534;  // nobody
  // Another user's page naming this (root's) live process.
  PlantedPage lying(own_page_name(), ::getpid());
  ASSERT_EQ(::chown(("/dev/shm/" + lying.name).c_str(), kOtherUser, kOtherUser), 0);
  // Another user's page of a process that has died: theirs to remove, not ours.
  const pid_t dead = dead_pid();
  PlantedPage abandoned(prefix() + std::to_string(dead), dead);
  ASSERT_EQ(::chown(("/dev/shm/" + abandoned.name).c_str(), kOtherUser, kOtherUser), 0);
  EXPECT_TRUE(read_stats_pages(prefix()).empty());
  EXPECT_TRUE(lying.exists());
  EXPECT_TRUE(abandoned.exists());
}

}  // namespace
}  // namespace npumem
