// `npumem replay --device acl:0` as a user runs it, with NPUMEM_ACL_LIBRARY naming the
// test double of libascendcl.so (tests/acl/): every shared trace completes with the
// peak it has on the virtual NPU and gives every byte back; expandable goes through the
// virtual-memory calls, or falls back where the library lacks them; a small NPU exits 3.
#include <gtest/gtest.h>

#include <filesystem>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "run_npumem.h"

namespace npumem::cli {
namespace {

using testing::read_file;
using testing::run_npumem;

const std::filesystem::path kSharedTraces = NPUMEM_SHARED_DIR "/traces";

// The environment for acl:0 over the double; the double logs aclFinalize to `log`.
std::string acl_environment(const std::filesystem::path& log, bool vmm = true,
                            const std::string& npu = "") {
  return "NPUMEM_ACL_LIBRARY=" + std::string(NPUMEM_ACL_DOUBLE_DIR) + (vmm ? "/vmm" : "/novmm") +
         "/libascendcl.so NPUMEM_ACL_DOUBLE_LOG=" + log.string() +
         (npu.empty() ? "" : " NPUMEM_ACL_DOUBLE=" + npu);
}

// The double's aclFinalize line as name -> value.
std::map<std::string, long long> finalize_counts(const std::filesystem::path& log) {
  std::map<std::string, long long> counts;
  std::istringstream words(read_file(log));
  std::string word;
  words >> word;
  EXPECT_EQ(word, "aclFinalize") << "ACL was not finalized: " << read_file(log);
  while (words >> word) {
    const std::size_t equals = word.find('=');
    if (equals != std::string::npos)
      counts[word.substr(0, equals)] = std::stoll(word.substr(equals + 1));
  }
  return counts;
}

class ReplayOnAcl : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(kSharedTraces)) GTEST_SKIP() << "no " << kSharedTraces;
    log_ = std::filesystem::temp_directory_path() /
           ("npumem_acl_" + std::to_string(::getpid()) + ".log");
    std::filesystem::remove(log_);
  }
  void TearDown() override { std::filesystem::remove(log_); }
  std::filesystem::path log_;
};

TEST_P(ReplayOnAcl, CompletesWithTheSimPeakAndFreesEverything) {
  const std::string trace = (kSharedTraces / (std::string(GetParam()) + ".trace")).string();
  const auto sim = run_npumem("replay " + trace + " --device sim --json");
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  const auto acl = run_npumem("replay " + trace + " --device acl:0 --json", acl_environment(log_));
  ASSERT_EQ(acl.exit_code, 0) << acl.err;
  const auto on_sim = nlohmann::json::parse(sim.out);
  const auto on_acl = nlohmann::json::parse(acl.out);
  EXPECT_EQ(on_acl["device"], "acl:0");
  EXPECT_EQ(on_acl["peak_requested_bytes"], on_sim["peak_requested_bytes"]);
  EXPECT_EQ(on_acl["peak_allocated_bytes"], on_sim["peak_allocated_bytes"]);
  auto counts = finalize_counts(log_);
  EXPECT_EQ(counts["held_bytes"], 0);
  EXPECT_EQ(counts["segments"], 0);
  EXPECT_GT(counts["mallocs"], 0);
  EXPECT_EQ(counts["mallocs"], counts["frees"]);
  EXPECT_EQ(counts["set_device_refs"], 0);
}

TEST_P(ReplayOnAcl, ExpandableGoesThroughTheVirtualMemoryCalls) {
  const std::string trace = (kSharedTraces / (std::string(GetParam()) + ".trace")).string();
  const auto acl = run_npumem("replay " + trace + " --device acl:0 --strategy expandable --json",
                              acl_environment(log_));
  ASSERT_EQ(acl.exit_code, 0) << acl.err;
  auto counts = finalize_counts(log_);
  EXPECT_EQ(counts["mallocs"], 0);
  EXPECT_GT(counts["maps"], 0);
  EXPECT_EQ(counts["maps"], counts["unmaps"]);
  EXPECT_EQ(counts["creates"], counts["releases"]);
  EXPECT_EQ(counts["reservations"], 0);
  EXPECT_EQ(counts["held_bytes"], 0);
}

// Every shared trace (the list is checked against the folder below).
constexpr const char* kTraceNames[] = {"resnet50_train", "mobilenet_v2_infer", "vit_b_16_infer",
                                       "bert_train_dynpad"};
INSTANTIATE_TEST_SUITE_P(SharedTraces, ReplayOnAcl, ::testing::ValuesIn(kTraceNames));

TEST(ReplayOnAclTraces, EverySharedTraceIsReplayed) {
  if (!std::filesystem::exists(kSharedTraces)) GTEST_SKIP() << "no " << kSharedTraces;
  std::set<std::string> in_folder;
  for (const auto& entry : std::filesystem::directory_iterator(kSharedTraces)) {
    if (entry.path().extension() == ".trace") in_folder.insert(entry.path().stem().string());
  }
  EXPECT_EQ(in_folder, std::set<std::string>(std::begin(kTraceNames), std::end(kTraceNames)));
}

class ReplayOnAclNpu : public ReplayOnAcl {};

// The seeds' NPU: CANN without the virtual-memory group. Expandable falls back.
TEST_F(ReplayOnAclNpu, WithoutVirtualMemoryExpandableFallsBack) {
  const std::string trace = (kSharedTraces / "mobilenet_v2_infer.trace").string();
  const auto acl = run_npumem("replay " + trace + " --device acl:0 --strategy expandable",
                              acl_environment(log_, false));
  ASSERT_EQ(acl.exit_code, 0) << acl.err;
  EXPECT_NE(acl.err.find("npumem: warning: expandable_segments feature is not supported by "
                         "device acl:0"),
            std::string::npos)
      << acl.err;
  EXPECT_NE(acl.out.find("on acl:0 (caching)"), std::string::npos) << acl.out;
  auto counts = finalize_counts(log_);
  EXPECT_EQ(counts["maps"], 0);
  EXPECT_GT(counts["mallocs"], 0);
  EXPECT_EQ(counts["held_bytes"], 0);
}

TEST_F(ReplayOnAclNpu, TooSmallExitsThreeWithTheExplanation) {
  const std::string trace = (kSharedTraces / "resnet50_train.trace").string();
  const auto acl = run_npumem("replay " + trace + " --device acl:0",
                              acl_environment(log_, true, "hbm=256MiB,ddr=0"));
  EXPECT_EQ(acl.exit_code, 3);
  EXPECT_NE(acl.err.find("out of memory: cannot allocate"), std::string::npos) << acl.err;
  EXPECT_NE(acl.err.find("hbm       256 MiB"), std::string::npos) << acl.err;
}

TEST_F(ReplayOnAclNpu, WithoutTheLibraryTheDeviceSaysSo) {
  const std::string trace = (kSharedTraces / "resnet50_train.trace").string();
  const auto acl = run_npumem("replay " + trace + " --device acl:0",
                              "NPUMEM_ACL_LIBRARY=/nonexistent/libascendcl.so");
  EXPECT_EQ(acl.exit_code, 2);
  EXPECT_NE(acl.err.find("bad device spec 'acl:0': no usable libascendcl.so"), std::string::npos)
      << acl.err;
}

}  // namespace
}  // namespace npumem::cli
