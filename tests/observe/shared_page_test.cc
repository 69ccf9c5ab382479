#include "device/shared_page.h"

#include <gtest/gtest.h>
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

    const auto reader = SharedPage::open_read_only(name, 4096);
    ASSERT_TRUE(reader.has_value());
    EXPECT_STREQ(static_cast<const char*>(reader->data()), "hello");
    EXPECT_FALSE(SharedPage::open_read_only(name, 8192).has_value());  // too small
  }
  EXPECT_TRUE(remove_shared_page(name));
  EXPECT_FALSE(remove_shared_page(name));
  EXPECT_FALSE(SharedPage::open_read_only(name, 16).has_value());
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
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_FALSE(process_alive(child));  // reaped: gone
}

}  // namespace
}  // namespace npumem::os
