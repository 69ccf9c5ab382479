// `npumem smi` and `npumem mon` against a real process: a replay held open with --hold.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "run_npumem.h"

extern char** environ;

namespace npumem::cli {
namespace {

using testing::run_npumem;

const std::string kTrace = std::string(NPUMEM_SHARED_DIR) + "/traces/vit_b_16_infer.trace";

// Starts `npumem replay kTrace --hold SECONDS` in the background.
pid_t start_held_replay(const std::string& seconds) {
  const std::string program = std::string(NPUMEM_BIN_DIR) + "/npumem";
  std::vector<std::string> args = {program, "replay", kTrace, "--hold", seconds};
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int error = posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  return error == 0 ? pid : -1;
}

// The stats pages of process `pid` in /dev/shm (npumem.<pid>.<random>).
std::vector<std::string> pages_of(pid_t pid) {
  const std::string prefix = "npumem." + std::to_string(pid) + ".";
  std::vector<std::string> pages;
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm")) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with(prefix)) pages.push_back(entry.path().string());
  }
  return pages;
}

// The process entry of `pid` in `smi --json`, or null.
nlohmann::json process_in_smi(pid_t pid) {
  const auto smi = run_npumem("smi --json");
  EXPECT_EQ(smi.exit_code, 0) << smi.err;
  const auto json = nlohmann::json::parse(smi.out);
  for (const auto& device : json.at("devices")) {
    for (const auto& process : device.at("processes")) {
      if (process.at("pid") == pid) {
        nlohmann::json found = process;
        found["device_id"] = device.at("id");
        found["device"] = device.at("name");
        return found;
      }
    }
  }
  return nullptr;
}

// Waits until smi sees the replay's page with its final figures.
nlohmann::json wait_for_allocations(pid_t pid) {
  for (int attempt = 0; attempt < 200; ++attempt) {
    nlohmann::json process = process_in_smi(pid);
    if (!process.is_null() && process.at("allocated_bytes").get<std::uint64_t>() > 0) {
      return process;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return nullptr;
}

TEST(SmiCliTest, SeesARunningReplayAndForgetsItWhenItExits) {
  if (!std::filesystem::exists(kTrace)) GTEST_SKIP() << "no " << kTrace;
  const pid_t replay = start_held_replay("60");
  ASSERT_GT(replay, 0);
  const nlohmann::json process = wait_for_allocations(replay);
  ASSERT_FALSE(process.is_null()) << "smi never showed pid " << replay;
  EXPECT_EQ(process.at("name"), "npumem");
  EXPECT_EQ(process.at("device"), "sim:0");
  EXPECT_GE(process.at("reserved_bytes").get<std::uint64_t>(),
            process.at("allocated_bytes").get<std::uint64_t>());
  EXPECT_GE(process.at("peak_allocated_bytes").get<std::uint64_t>(),
            process.at("allocated_bytes").get<std::uint64_t>());

  const auto table = run_npumem("smi");
  EXPECT_EQ(table.exit_code, 0);
  EXPECT_NE(table.out.find("npumem-smi"), std::string::npos);
  EXPECT_NE(table.out.find(" " + std::to_string(replay) + " "), std::string::npos) << table.out;
  const std::string id = std::to_string(process.at("device_id").get<int>());
  const auto detail = run_npumem("smi -t memory -i " + id);
  EXPECT_EQ(detail.exit_code, 0) << detail.err;
  EXPECT_NE(detail.out.find("Process " + std::to_string(replay) + " (npumem)"), std::string::npos)
      << detail.out;
  // One device in the shape of the whole listing (it printed the bare device object).
  const auto one = run_npumem("smi -i " + id + " --json");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const auto listed = nlohmann::json::parse(one.out).at("devices");
  ASSERT_EQ(listed.size(), 1u) << one.out;
  EXPECT_EQ(listed.at(0).at("id"), process.at("device_id"));
  const auto mon = run_npumem("mon --count 2 --interval 0.1");
  EXPECT_EQ(mon.exit_code, 0);
  EXPECT_EQ(std::count(mon.out.begin(), mon.out.end(), '\n'), 2) << mon.out;
  EXPECT_NE(mon.out.find("sim:0 procs"), std::string::npos) << mon.out;

  // SIGTERM ends the hold, and the replay exits normally, removing its page.
  ::kill(replay, SIGTERM);
  int status = 0;
  ASSERT_EQ(::waitpid(replay, &status, 0), replay);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_TRUE(process_in_smi(replay).is_null());
  EXPECT_TRUE(pages_of(replay).empty());
}

TEST(SmiCliTest, PagesOfKilledProcessesAreCleanedUp) {
  if (!std::filesystem::exists(kTrace)) GTEST_SKIP() << "no " << kTrace;
  const pid_t replay = start_held_replay("60");
  ASSERT_GT(replay, 0);
  ASSERT_FALSE(wait_for_allocations(replay).is_null());
  ::kill(replay, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(replay, &status, 0), replay);
  EXPECT_EQ(pages_of(replay).size(), 1u);  // nobody removed it at exit
  EXPECT_TRUE(process_in_smi(replay).is_null());
  EXPECT_TRUE(pages_of(replay).empty());
}

// With /dev/shm full the stats page cannot be made: the replay runs to the end and
// says once that it does not publish (it used to die of SIGBUS writing the page).
TEST(SmiCliTest, AReplayCompletesWithAWarningWhenDevShmIsFull) {
  if (!std::filesystem::exists(kTrace)) GTEST_SKIP() << "no " << kTrace;
  const std::string private_shm =
      "unshare -rm sh -c 'mount -t tmpfs -o size=8k tmpfs /dev/shm && "
      "{ head -c 8192 /dev/zero > /dev/shm/fill 2>/dev/null; exec \"$0\" \"$@\"; }'";
  if (std::system("unshare -rm sh -c 'mount -t tmpfs -o size=8k tmpfs /dev/shm' "
                  ">/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "this machine does not allow a tmpfs /dev/shm in a private mount "
                    "namespace (unshare -rm; user namespaces may be off)";
  }
  const auto replay = run_npumem("replay " + kTrace, private_shm);
  EXPECT_EQ(replay.exit_code, 0) << replay.err;
  EXPECT_NE(replay.out.find("peak"), std::string::npos) << replay.out;
  const std::string warning = "not publishing stats for `npumem smi`";
  const std::size_t first = replay.err.find(warning);
  ASSERT_NE(first, std::string::npos) << replay.err;
  EXPECT_EQ(replay.err.find(warning, first + 1), std::string::npos) << replay.err;  // once
  EXPECT_NE(replay.err.find("No space left on device"), std::string::npos) << replay.err;
}

TEST(SmiCliTest, BadRequestsGetAClearError) {
  const auto unknown = run_npumem("smi -t memory -i 4096");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("no device with id 4096"), std::string::npos) << unknown.err;
  const auto no_id = run_npumem("smi -t memory");
  EXPECT_EQ(no_id.exit_code, 2);
  EXPECT_NE(no_id.err.find("needs -i ID"), std::string::npos) << no_id.err;
  EXPECT_EQ(run_npumem("smi -t power -i 0").exit_code, 2);
}

}  // namespace
}  // namespace npumem::cli
