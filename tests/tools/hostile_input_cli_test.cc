// Input built to break the CLI: ill-formed UTF-8 in names and tags, JSON nested
// far too deep, numbers out of range. Each must end in output or a clear error,
// never in an abort or a crash.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "run_npumem.h"

namespace npumem::cli {
namespace {

using testing::run_npumem;

class HostileInputCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("npumem_hostile_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(dir_ / name, std::ios::binary) << text;
    return (dir_ / name).string();
  }
  std::filesystem::path dir_;
};

// A pool and a tag that are not UTF-8 (a truncated sequence, a lone 0xff).
constexpr const char* kBadNamesTrace =
    "p pool\xe6\xa8\na 1 3000000\nt tag\xff\na 2 1000\nf 1\nf 2\n";

TEST_F(HostileInputCliTest, IllFormedUtf8NamesStillGiveJsonAndADrawableSnapshot) {
  const std::string trace = write("bad.trace", kBadNamesTrace);
  const auto report = run_npumem("replay " + trace + " --device sim:hbm=1GiB,ddr=0 --json");
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_TRUE(nlohmann::json::accept(report.out)) << report.out;

  const std::string snapshot = (dir_ / "snap.json").string();
  const auto recorded =
      run_npumem("replay " + trace + " --device sim:hbm=1GiB,ddr=0 --record " + snapshot);
  ASSERT_EQ(recorded.exit_code, 0) << recorded.err;
  const auto drawn = run_npumem("viz " + snapshot + " -o " + (dir_ / "page.html").string());
  EXPECT_EQ(drawn.exit_code, 0) << drawn.err;
}

TEST_F(HostileInputCliTest, DeeplyNestedJsonIsRefusedWithFileAndLine) {
  const std::string deep = std::string(100'000, '[') + std::string(100'000, ']');
  const std::string model = write("deep.json", "{\"layers\":\n" + deep + "}");
  for (const std::string& command :
       {"plan shard " + model + " --hbm 1GiB", "plan recompute " + model + " --budget 1GiB",
        "viz " + model + " -o " + (dir_ / "p.html").string()}) {
    const auto result = run_npumem(command);
    EXPECT_EQ(result.exit_code, 2) << command << "\n" << result.err;
    EXPECT_NE(result.err.find(model + ":2:"), std::string::npos) << command << "\n" << result.err;
    EXPECT_NE(result.err.find("nested deeper"), std::string::npos) << result.err;
  }
}

TEST_F(HostileInputCliTest, NumbersOutOfRangeAreErrorsWithFileAndLine) {
  const std::string model = write("huge.json",
                                  "{\"layers\": [\n{\"name\": \"a\", \"weight_bytes\": 1e400, "
                                  "\"activation_bytes\": 1}]}");
  for (const std::string& command :
       {"plan shard " + model + " --hbm 1GiB", "plan recompute " + model + " --budget 1GiB"}) {
    const auto result = run_npumem(command);
    EXPECT_EQ(result.exit_code, 2) << command << "\n" << result.err;
    EXPECT_NE(result.err.find(model + ":2:"), std::string::npos) << command << "\n" << result.err;
  }
}

TEST_F(HostileInputCliTest, BadSizeOptionsNameTheOption) {
  const std::string records = write("m.records", "100 0 1\n");
  const std::string model =
      write("m.json", R"({"layers": [{"name": "a", "weight_bytes": 1, "activation_bytes": 1}]})");
  for (const auto& [command, option] : std::vector<std::pair<std::string, std::string>>{
           {"plan memory " + records + " --alignment x", "--alignment"},
           {"plan memory " + records + " --alignment 3", "--alignment"},
           {"plan shard " + model + " --hbm lots", "--hbm"},
           {"plan shard " + model + " --hbm 1GiB --bandwidth fast", "--bandwidth"},
           {"plan recompute " + model + " --budget -1", "--budget"}}) {
    const auto result = run_npumem(command);
    EXPECT_EQ(result.exit_code, 2) << command << "\n" << result.err;
    EXPECT_NE(result.err.find(option), std::string::npos) << command << "\n" << result.err;
  }
}

// The message names the value and what is wrong with it, not the top of a range.
TEST_F(HostileInputCliTest, NegativeNumbersNameTheOptionAndTheValue) {
  const std::string records = write("m.records", "100 0 1\n");
  const std::string trace = write("t.trace", "a 1 100\ni\nf 1\n");
  for (const auto& [command, message] : std::vector<std::pair<std::string, std::string>>{
           {"plan memory " + records + " --time-limit -1", "--time-limit: -1 is negative"},
           {"replay " + trace + " --leak-threshold -0.5", "--leak-threshold: -0.5 is negative"},
           {"smi -i -1", "--id: -1 is negative"},
           {"advise buckets " + trace + " --max-buckets 0", "--max-buckets: 0 is not positive"},
           // Unsigned options: CLI11 alone reads -1 as 2^64-1 and saturates what is larger.
           {"plan memory --trace " + trace + " --iteration -1", "--iteration: -1 is negative"},
           {"mon --count -1", "--count: -1 is negative"},
           {"advise buckets " + trace + " --max-buckets 99999999999999999999",
            "--max-buckets: 99999999999999999999 is too large"},
           // NaN passes every comparison as false, ranges included.
           {"mon --interval nan --count 1", "--interval: nan is not a number"},
           // One message for text and for numbers out of range, not CLI11's two.
           {"mon --interval abc --count 1",
            "--interval: abc is not a number of seconds (0.05 to 3600 seconds)"},
           {"mon --interval 0 --count 1", "--interval: 0 is outside 0.05 to 3600 seconds"},
           {"replay " + trace + " --hold nan", "--hold: nan is not a number"}}) {
    const auto result = run_npumem(command);
    EXPECT_EQ(result.exit_code, 2) << command << "\n" << result.err;
    EXPECT_NE(result.err.find(message), std::string::npos) << command << "\n" << result.err;
    EXPECT_EQ(result.err.find("17976931348623157"), std::string::npos) << result.err;
  }
}

TEST_F(HostileInputCliTest, HistoryEntriesIsBounded) {
  const std::string trace = write("t.trace", "a 1 100\nf 1\n");
  const auto huge = run_npumem("replay " + trace + " --record " + (dir_ / "s.json").string() +
                               " --history-entries 4611686018427387904");
  EXPECT_EQ(huge.exit_code, 2) << huge.err;
  EXPECT_NE(huge.err.find("--history-entries"), std::string::npos) << huge.err;
}

// Sizes that overflow 64 bits only once aligned or summed are named by file and line.
TEST_F(HostileInputCliTest, PlanMemorySizeOverflowsNameFileAndLine) {
  const std::string aligned =
      write("aligned.records", "# header\n64 0 1\n18446744073709551615 1 2\n");
  const auto one = run_npumem("plan memory " + aligned);
  EXPECT_EQ(one.exit_code, 2) << one.err;
  EXPECT_NE(one.err.find(aligned + ":3: the tensors' bytes sum past 2^63"), std::string::npos)
      << one.err;
  const std::string summed =
      write("summed.records", "9223372036854775808 0 2\n\n9223372036854775808 1 2\n");
  const auto two = run_npumem("plan memory " + summed);
  EXPECT_EQ(two.exit_code, 2) << two.err;
  EXPECT_NE(two.err.find(summed + ":3: the tensors' bytes sum past 2^63"), std::string::npos)
      << two.err;
  // A trace's tensors too: its figures were capped at 2^64-1 ("100.0 % of naive").
  const std::string trace = write("huge.trace", "a 0 18446744073709551000\nf 0\na 1 5000\n");
  const auto traced = run_npumem("plan memory --trace " + trace);
  EXPECT_EQ(traced.exit_code, 2) << traced.out;
  EXPECT_NE(traced.err.find(trace + ": the tensors' bytes sum past 2^63"), std::string::npos)
      << traced.err;
}

// A static arena the device refuses (an injected fault) is said to be refused, not
// too large, and --json still prints its report.
TEST_F(HostileInputCliTest, AStaticArenaRefusedByADeviceFaultIsReportedAsSuch) {
  const std::string trace = write("small.trace", "a 1 1000\nf 1\n");
  const auto replay = run_npumem("replay " + trace +
                                 " --strategy static --conf static_size:1GiB"
                                 " --device sim:fail_every=1 --json");
  EXPECT_EQ(replay.exit_code, 3) << replay.err;
  const auto report = nlohmann::json::parse(replay.out);
  const std::string reason = report.at("out_of_memory");
  EXPECT_NE(reason.find("the device refused the static arena of 1.00 GiB"), std::string::npos)
      << reason;
  EXPECT_EQ(reason.find("does not fit"), std::string::npos) << reason;
  EXPECT_NE(replay.err.find("device refused"), std::string::npos) << replay.err;

  const auto too_large =
      run_npumem("replay " + trace + " --strategy static --conf static_size:128GiB --json");
  EXPECT_EQ(too_large.exit_code, 3) << too_large.err;
  EXPECT_NE(nlohmann::json::parse(too_large.out)
                .at("out_of_memory")
                .get<std::string>()
                .find("does not fit in HBM (limit 64.0 GiB)"),
            std::string::npos)
      << too_large.out;
}

}  // namespace
}  // namespace npumem::cli
