#include "device/os/shared_page.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "npumem/errors.h"

namespace npumem::os {
namespace {

std::string unique_name(const char* what) {
  return "npumem_test." + std::to_string(::getpid()) + "." + what;
}

TEST(SharedPage, CreatedPagesAreSeenByReadersAndListed) {
  const std::string name = unique_name("roundtrip");
  {
    SharedPage page = SharedPage::create(name, 4096);
    EXPECT_EQ(page.size(), 4096u);
    EXPECT_EQ(static_cast<const char*>(page.data())[100], 0);  // zero-filled
    std::strcpy(static_cast<char*>(page.data()), "hello");
    EXPECT_TRUE(std::filesystem::exists("/dev/shm/" + name));
    const auto listed = list_shared_pages("npumem_test." + std::to_string(::getpid()) + ".");
    EXPECT_NE(std::find(listed.begin(), listed.end(), name), listed.end());

    const auto reader = SharedPageReader::open(name);
    ASSERT_TRUE(reader.has_value());
    EXPECT_EQ(reader->size(), 4096u);
    EXPECT_EQ(reader->owner_uid(), current_uid());
    char copy[6] = {};
    ASSERT_TRUE(reader->read(0, copy, sizeof copy));
    EXPECT_STREQ(copy, "hello");
    EXPECT_FALSE(reader->read(4092, copy, sizeof copy));  // past the end
  }
  EXPECT_TRUE(remove_shared_page(name));
  EXPECT_FALSE(remove_shared_page(name));
  EXPECT_FALSE(SharedPageReader::open(name).has_value());
}

TEST(SharedPage, UniqueNamesCannotBeTakenFirst) {
  const std::string prefix = unique_name("unique.");
  SharedPage first = SharedPage::create_unique(prefix, 64);
  SharedPage second = SharedPage::create_unique(prefix, 64);
  EXPECT_TRUE(first.name().starts_with(prefix));
  EXPECT_EQ(first.name().size(), prefix.size() + 16);  // 64 random bits in hex
  EXPECT_NE(first.name(), second.name());
  EXPECT_TRUE(std::filesystem::exists("/dev/shm/" + first.name()));
  EXPECT_TRUE(std::filesystem::exists("/dev/shm/" + second.name()));
  remove_shared_page(first.name());
  remove_shared_page(second.name());
}

TEST(SharedPage, ReservesItsMemoryUpFront) {
  const std::string name = unique_name("reserved");
  SharedPage page = SharedPage::create(name, 1 << 20);
  struct stat info {};
  ASSERT_EQ(::stat(("/dev/shm/" + name).c_str(), &info), 0);
  // Allocated blocks, not a sparse file that a write could find without memory.
  EXPECT_GE(static_cast<std::size_t>(info.st_blocks) * 512, std::size_t{1} << 20);
  remove_shared_page(name);
}

TEST(SharedPage, AReaderOfATruncatedPageReadsShortInsteadOfCrashing) {
  const std::string name = unique_name("truncated");
  SharedPage page = SharedPage::create(name, 8192);
  const auto reader = SharedPageReader::open(name);
  ASSERT_TRUE(reader.has_value());
  ASSERT_EQ(::truncate(("/dev/shm/" + name).c_str(), 16), 0);  // its owner shrinks it
  char copy[4096];
  EXPECT_FALSE(reader->read(0, copy, sizeof copy));
  EXPECT_TRUE(reader->read(0, copy, 16));
  remove_shared_page(name);
}

TEST(SharedPage, CreateReplacesAStalePageOfTheSameName) {
  const std::string name = unique_name("replace");
  {
    SharedPage old_page = SharedPage::create(name, 64);
    std::strcpy(static_cast<char*>(old_page.data()), "stale");
  }
  SharedPage page = SharedPage::create(name, 64);
  EXPECT_EQ(static_cast<const char*>(page.data())[0], 0);
  remove_shared_page(name);
}

TEST(SharedPage, BadNamesAreRejected) {
  EXPECT_THROW(SharedPage::create("", 64), Error);
  EXPECT_THROW(SharedPage::create("a/b", 64), Error);
}

TEST(SharedPage, MovedPagesKeepTheMapping) {
  const std::string name = unique_name("move");
  SharedPage page = SharedPage::create(name, 64);
  void* data = page.data();
  SharedPage moved = std::move(page);
  EXPECT_EQ(moved.data(), data);
  remove_shared_page(name);
}

TEST(SharedPage, ProcessAliveKnowsLiveAndDeadProcesses) {
  EXPECT_TRUE(process_alive(::getpid()));
  EXPECT_FALSE(process_alive(0));
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  // Exited, not reaped yet (a killed worker whose parent has not waited): a zombie
  // holds no memory, so it is not alive.
  siginfo_t info{};
  ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOWAIT), 0);
  EXPECT_FALSE(process_alive(child));
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_FALSE(process_alive(child));  // reaped: gone
}

}  // namespace
}  // namespace npumem::os
