// `npumem advise buckets`: its table, its JSON and its exit codes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "run_npumem.h"

namespace npumem::cli {
namespace {

using testing::run_npumem;

class AdviseCli : public ::testing::Test {
 protected:
  std::filesystem::path write(const std::string& name, const std::string& text) {
    const auto path = dir_ / name;
    std::ofstream(path) << text;
    return path;
  }
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("npumem_advise_cli_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path dir_;
};

// Batches of 1, 4 and 5 MiB requests, twice each.
const char* const kBatches =
    "i\na 0 1048576\nf 0\ni\na 1 4194304\nf 1\ni\na 2 5242880\nf 2\n"
    "i\na 3 1048576\nf 3\ni\na 4 4194304\nf 4\ni\na 5 5242880\nf 5\n";

TEST_F(AdviseCli, PrintsEachBucketingAndTheRecommendation) {
  const auto trace = write("batches.trace", kBatches);
  const auto out = run_npumem("advise buckets " + trace.string() + " --max-buckets 3");
  ASSERT_EQ(out.exit_code, 0) << out.err;
  EXPECT_NE(out.out.find("6 iterations, 3 shapes in 1 family"), std::string::npos) << out.out;
  EXPECT_NE(out.out.find("(`plan memory --alignment 512` plans alike)"), std::string::npos)
      << out.out;
  // Two buckets: padding 4 MiB to 5 costs less than 1 MiB to 4.
  EXPECT_NE(out.out.find("bucket 5.00 MiB (plan 5.00 MiB): iterations 1 2 4 5"), std::string::npos)
      << out.out;
  EXPECT_NE(out.out.find("recommended: 3 buckets"), std::string::npos) << out.out;
  // A bound far above the shapes costs nothing.
  const auto many = run_npumem("advise buckets " + trace.string() + " --max-buckets 1000000000");
  ASSERT_EQ(many.exit_code, 0) << many.err;
  EXPECT_NE(many.out.find("4-1000000000 (more buckets than shapes)"), std::string::npos)
      << many.out;
}

TEST_F(AdviseCli, JsonHasOneChoicePerKUpToTheShapes) {
  const auto trace = write("batches.trace", kBatches);
  const auto out = run_npumem("advise buckets " + trace.string() + " --max-buckets 4 --json");
  ASSERT_EQ(out.exit_code, 0) << out.err;
  const auto json = nlohmann::json::parse(out.out);
  EXPECT_EQ(json["max_buckets"], 4u);
  // Said, so that plan memory's arena (64 B alignment by default) can be matched.
  EXPECT_EQ(json["alignment_bytes"], 512u);
  EXPECT_EQ(json["tolerance_percent"], 1.0) << "in percent, as --tolerance takes it";
  ASSERT_EQ(json["choices"].size(), 3u);
  EXPECT_EQ(json["choices"][0]["arena_bytes"], 5242880u);
  // Every iteration padded to 5 MiB: 4 + 1 MiB wasted, twice, over 6 iterations (rounded).
  EXPECT_EQ(json["choices"][0]["waste_bytes"], ((4194304u + 1048576u) * 2 + 3) / 6);
  EXPECT_EQ(json["choices"][2]["waste_bytes"], 0u);
  EXPECT_TRUE(json["choices"][2]["possible"]);
  EXPECT_GT(json["caching_peak_reserved_bytes"], 0u);
}

TEST_F(AdviseCli, ANegativeZeroToleranceReadsAsZero) {
  const auto trace = write("batches.trace", kBatches);
  const auto out = run_npumem("advise buckets " + trace.string() + " --tolerance -0");
  ASSERT_EQ(out.exit_code, 0) << out.err;
  EXPECT_NE(out.out.find("within 0% of the least"), std::string::npos) << out.out;
}

TEST_F(AdviseCli, BadInputExitsTwoNamingTheProblem) {
  const auto flat = write("flat.trace", "a 0 10\nf 0\n");
  auto out = run_npumem("advise buckets " + flat.string());
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_NE(out.err.find("no `i` lines"), std::string::npos) << out.err;
  EXPECT_NE(out.err.find("npumem.torch.iteration()"), std::string::npos) << out.err;

  const auto broken = write("broken.trace", "i\na 0 ten\n");
  out = run_npumem("advise buckets " + broken.string());
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_NE(out.err.find("broken.trace:2"), std::string::npos) << out.err;

  const auto trace = write("batches.trace", kBatches);
  out = run_npumem("advise buckets " + trace.string() + " --max-buckets 0");
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_NE(out.err.find("--max-buckets: 0 is not positive"), std::string::npos) << out.err;

  out = run_npumem("advise buckets " + (dir_ / "missing.trace").string());
  EXPECT_EQ(out.exit_code, 2);
}

}  // namespace
}  // namespace npumem::cli
