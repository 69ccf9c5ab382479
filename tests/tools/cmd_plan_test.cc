#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "plan/plan_checker.h"
#include "run_npumem.h"

namespace npumem::plan {
namespace {

using cli::testing::run_npumem;
using cli::testing::TempDir;

const char* const kRecords =
    "# three tensors\n"
    "4096 0 2\n"
    "1000 1 3\n"
    "2048 3 4\n";

const char* const kModel = R"({"model": "tiny", "input_bytes": 1000, "layers": [
  {"name": "a", "weight_bytes": 400000, "activation_bytes": 1000, "compute_ms": 2},
  {"name": "b", "weight_bytes": 400000, "activation_bytes": 1000, "compute_ms": 2},
  {"name": "c", "weight_bytes": 400000, "activation_bytes": 1000, "compute_ms": 2}]})";

TEST(CmdPlanTest, MemoryJsonHasTheFieldsAndValidOffsets) {
  TempDir dir;
  cli::testing::write_text(dir.file("m.records"), kRecords);
  const auto result =
      run_npumem("plan memory " + dir.file("m.records").string() + " --json --offsets", dir);
  ASSERT_EQ(result.exit_code, cli::kExitOk) << result.err;
  const nlohmann::json json = nlohmann::json::parse(result.out);
  EXPECT_EQ(json["tensors"], 3);
  EXPECT_EQ(json["lower_bound_bytes"], 4096 + 1024);
  EXPECT_EQ(json["naive_bytes"], 4096 + 1024 + 2048);
  EXPECT_EQ(json["arena_bytes"], 4096 + 1024);
  EXPECT_DOUBLE_EQ(json["ratio"].get<double>(), 1.0);
  EXPECT_TRUE(json["algorithm"].is_string());
  EXPECT_TRUE(json["plan_ms"].is_number());
  MemoryPlan plan;
  plan.offsets = json["offsets"].get<std::vector<std::uint64_t>>();
  plan.arena_bytes = json["arena_bytes"];
  const std::vector<TensorLifetime> tensors{{4096, 0, 2}, {1000, 1, 3}, {2048, 3, 4}};
  EXPECT_EQ(testing::plan_problem(tensors, plan, 64), "");
}

TEST(CmdPlanTest, MemoryTextForPeople) {
  TempDir dir;
  cli::testing::write_text(dir.file("m.records"), kRecords);
  const auto result = run_npumem("plan memory " + dir.file("m.records").string(), dir);
  ASSERT_EQ(result.exit_code, cli::kExitOk) << result.err;
  EXPECT_NE(result.out.find("lower bound  5.00 KiB (5120 B)"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("1.0000 x lower bound"), std::string::npos) << result.out;
}

TEST(CmdPlanTest, MalformedRecordsExitTwoNamingTheLine) {
  TempDir dir;
  const std::pair<const char*, const char*> cases[] = {
      {"10 0 1\n5x 1 2\n", ":2: bytes is not a non-negative integer: '5x'"},
      {"10 0 1\n\n10 5 2\n", ":3: last_op 2 is before first_op 5"},
      {"-10 0 1\n", ":1: bytes is negative: '-10'"},
  };
  for (const auto& [text, message] : cases) {
    cli::testing::write_text(dir.file("bad.records"), text);
    const auto result = run_npumem("plan memory " + dir.file("bad.records").string(), dir);
    EXPECT_EQ(result.exit_code, cli::kExitBadInput) << text;
    EXPECT_NE(result.err.find(dir.file("bad.records").string() + message), std::string::npos)
        << result.err;
  }
  EXPECT_EQ(run_npumem("plan memory " + dir.file("missing.records").string(), dir).exit_code,
            cli::kExitBadInput);
  // A file of no tensor is a mistake (an empty export, the wrong file), as an empty trace is.
  for (const char* text : {"", "# a comment\n\n"}) {
    cli::testing::write_text(dir.file("empty.records"), text);
    const auto result = run_npumem("plan memory " + dir.file("empty.records").string(), dir);
    EXPECT_EQ(result.exit_code, cli::kExitBadInput) << result.out;
    EXPECT_NE(result.err.find("empty.records: no tensor"), std::string::npos) << result.err;
  }
}

TEST(CmdPlanTest, BadOptionsExitTwo) {
  TempDir dir;
  cli::testing::write_text(dir.file("m.records"), kRecords);
  const std::string records = dir.file("m.records").string();
  const auto alignment = run_npumem("plan memory " + records + " --alignment 48", dir);
  EXPECT_EQ(alignment.exit_code, cli::kExitBadInput);
  EXPECT_NE(alignment.err.find("power of two"), std::string::npos) << alignment.err;
  EXPECT_EQ(run_npumem("plan memory " + records + " --time-limit -1", dir).exit_code,
            cli::kExitBadInput);
  EXPECT_EQ(run_npumem("plan", dir).exit_code, cli::kExitBadInput);
}

TEST(CmdPlanTest, SeedAndIterationsMakePlansReproducible) {
  TempDir dir;
  std::string records;
  for (int i = 0; i < 300; ++i) {
    records += std::to_string(100 + (i * 7919) % 5000) + " " + std::to_string(i % 50) + " " +
               std::to_string(i % 50 + (i * 31) % 9) + "\n";
  }
  cli::testing::write_text(dir.file("r.records"), records);
  const std::string command = "plan memory " + dir.file("r.records").string() +
                              " --json --offsets --iterations 30 --seed 4 --time-limit 3600";
  const auto first = nlohmann::json::parse(run_npumem(command, dir).out);
  const auto again = nlohmann::json::parse(run_npumem(command, dir).out);
  EXPECT_EQ(first["offsets"], again["offsets"]);
  EXPECT_LE(first["search_iterations"].get<int>(), 30);
}

TEST(CmdPlanTest, MemoryPlanOfATraceAndABudget) {
  TempDir dir;
  // Iteration 1: 4096 and 1024 live together, then 2048 alone.
  cli::testing::write_text(
      dir.file("t.trace"),
      "a 0 100\ni\na 1 64\nf 1\ni\na 2 4096\na 3 1000\nf 2\nf 3\na 4 2048\nf 4\n");
  const std::string trace = dir.file("t.trace").string();
  auto result =
      run_npumem("plan memory --trace " + trace + " --iteration 1 --json --budget 5KiB", dir);
  ASSERT_EQ(result.exit_code, cli::kExitOk) << result.err;
  nlohmann::json json = nlohmann::json::parse(result.out);
  EXPECT_EQ(json["tensors"], 3);
  EXPECT_EQ(json["arena_bytes"], 4096 + 1024);
  EXPECT_EQ(json["fits"], true);
  EXPECT_EQ(json["budget_margin_bytes"], 5120 - 4096 - 1024);
  result = run_npumem("plan memory --trace " + trace + " --budget 4KiB", dir);
  EXPECT_EQ(result.exit_code, cli::kExitBadInput);
  EXPECT_NE(result.out.find("does not fit"), std::string::npos) << result.out;
  EXPECT_NE(result.err.find("the plan needs 5.12 KiB (5248 B), over the budget of 4.00 KiB "
                            "(4096 B) by 1.12 KiB"),
            std::string::npos)
      << result.err;
  result = run_npumem("plan memory --trace " + trace + " --iteration 2", dir);
  EXPECT_EQ(result.exit_code, cli::kExitBadInput);
  EXPECT_NE(result.err.find("no iteration 2"), std::string::npos) << result.err;
  cli::testing::write_text(dir.file("m.records"), kRecords);
  result = run_npumem("plan memory " + dir.file("m.records").string() + " --trace " + trace, dir);
  EXPECT_EQ(result.exit_code, cli::kExitBadInput);
  EXPECT_NE(result.err.find("give one of a records file, --trace TRACE or --onnx MODEL"),
            std::string::npos)
      << result.err;
  cli::testing::write_text(dir.file("bad.trace"), "a 0 10\nf 1\n");
  result = run_npumem("plan memory --trace " + dir.file("bad.trace").string(), dir);
  EXPECT_EQ(result.exit_code, cli::kExitBadInput);
  EXPECT_NE(result.err.find("bad.trace:2"), std::string::npos) << result.err;
}

// The ONNX model itself is read by Python (python/tests/test_onnx_lifetimes.py); these
// are refused before Python runs.
TEST(CmdPlanTest, OnnxOptionsThatDoNotGoTogetherExitTwo) {
  TempDir dir;
  cli::testing::write_text(dir.file("m.records"), kRecords);
  cli::testing::write_text(dir.file("m.onnx"), "not read");
  const std::string records = dir.file("m.records").string();
  const std::string model = dir.file("m.onnx").string();
  const std::pair<std::string, std::string> cases[] = {
      {records + " --onnx " + model, "give one of a records file, --trace TRACE or --onnx MODEL"},
      {"--onnx " + model + " --trace " + model, "give one of a records file"},
      {records + " --dim batch=1", "--dim needs --onnx"},
      {"--onnx " + model + " --iteration 0", "--iteration needs --trace"},
  };
  for (const auto& [args, message] : cases) {
    const auto result = run_npumem("plan memory " + args, dir);
    EXPECT_EQ(result.exit_code, cli::kExitBadInput) << args;
    EXPECT_NE(result.err.find(message), std::string::npos) << result.err;
  }
}

// Sizes come from Python as JSON numbers, which may pass 64 bits or be negative: read
// as they were, they wrapped (an arena of 0 B that fit any budget, exit 0).
TEST(CmdPlanTest, OnnxSizesPastSixtyFourBitsAreRefused) {
  TempDir dir;
  cli::testing::write_text(dir.file("m.onnx"), "not read");
  const std::string tensor = R"({"bytes": BYTES, "first_op": 0, "last_op": 0})";
  const std::string lifetimes = R"({"weight_tensors": 0, "weight_bytes": 0, )"
                                R"("input_tensors": 0, "input_bytes": INPUT, "tensors": [TENSOR]})";
  const auto with = [](std::string text, const std::string& key, const std::string& value) {
    return text.replace(text.find(key), key.size(), value);
  };
  const std::pair<std::string, std::string> cases[] = {
      {"18446744073709551616", "0"}, {"-64", "0"}, {"1.5", "0"}, {"64", "590295810358705651712"}};
  for (const auto& [bytes, input] : cases) {
    const std::string json =
        with(with(lifetimes, "TENSOR", with(tensor, "BYTES", bytes)), "INPUT", input);
    cli::testing::write_text(dir.file("python"), "#!/bin/sh\necho '" + json + "'\n");
    std::filesystem::permissions(dir.file("python"), std::filesystem::perms::owner_all);
    const auto result =
        run_npumem("plan memory --onnx " + dir.file("m.onnx").string() + " --budget 1KiB",
                   "NPUMEM_PYTHON=" + dir.file("python").string());
    EXPECT_NE(result.exit_code, cli::kExitOk) << json << "\n" << result.out;
    EXPECT_NE(result.err.find("not a whole number of at most 2^64-1"), std::string::npos)
        << result.err;
  }
}

TEST(CmdPlanTest, ShardPlanAndItsBaseline) {
  TempDir dir;
  cli::testing::write_text(dir.file("m.json"), kModel);
  const std::string model = dir.file("m.json").string();
  const auto result =
      run_npumem("plan shard " + model + " --hbm 1MiB --bandwidth 1GB/s --json", dir);
  ASSERT_EQ(result.exit_code, cli::kExitOk) << result.err;
  const nlohmann::json json = nlohmann::json::parse(result.out);
  EXPECT_EQ(json["shards"].size(), json["shard_count"].get<std::size_t>());
  EXPECT_LE(json["total_ms"].get<double>(), json["fewest_shards"]["total_ms"].get<double>());
  for (const auto& shard : json["shards"])
    EXPECT_LE(shard["peak_bytes"].get<std::uint64_t>(), 1u << 20);
  const auto text = run_npumem("plan shard " + model + " --hbm 1MiB", dir);
  EXPECT_NE(text.out.find("fewest shards"), std::string::npos) << text.out;
  const auto too_small = run_npumem("plan shard " + model + " --hbm 100KiB", dir);
  EXPECT_EQ(too_small.exit_code, cli::kExitOutOfMemory);
  EXPECT_NE(too_small.err.find("layer 0 'a'"), std::string::npos) << too_small.err;
  EXPECT_EQ(run_npumem("plan shard " + model, dir).exit_code, cli::kExitBadInput);  // no --hbm
}

// A plan that cannot fit still answers a script on stdout under --json: fits false and
// the exact bytes the leanest plan needs (stderr's message rounds them), exit 3.
TEST(CmdPlanTest, NoFitUnderJsonAnswersWithTheBytesNeeded) {
  TempDir dir;
  cli::testing::write_text(dir.file("m.json"), kModel);
  const std::string model = dir.file("m.json").string();
  for (const std::string& command : {"plan shard " + model + " --hbm 100KiB --json",
                                     "plan recompute " + model + " --budget 1000 --json"}) {
    const auto result = run_npumem(command, dir);
    EXPECT_EQ(result.exit_code, cli::kExitOutOfMemory) << command;
    const nlohmann::json json = nlohmann::json::parse(result.out);
    EXPECT_EQ(json["fits"], false) << command;
    EXPECT_GT(json["needed_bytes"].get<std::uint64_t>(), 1000u) << command;
    EXPECT_EQ(json["model"], model);
    EXPECT_FALSE(result.err.empty());
  }
}

TEST(CmdPlanTest, RecomputePlanAndBudgetTooSmall) {
  TempDir dir;
  cli::testing::write_text(dir.file("m.json"), kModel);
  const std::string model = dir.file("m.json").string();
  const auto result = run_npumem("plan recompute " + model + " --budget 2000 --json", dir);
  ASSERT_EQ(result.exit_code, cli::kExitOk) << result.err;
  const nlohmann::json json = nlohmann::json::parse(result.out);
  EXPECT_LE(json["peak_bytes"].get<std::uint64_t>(), 2000u);
  EXPECT_TRUE(json.contains("sqrt_n"));
  const auto too_small = run_npumem("plan recompute " + model + " --budget 1000", dir);
  EXPECT_EQ(too_small.exit_code, cli::kExitOutOfMemory);
  EXPECT_NE(too_small.err.find("leanest plan needs"), std::string::npos) << too_small.err;
}

TEST(CmdPlanTest, BadModelFilesExitTwoNamingTheProblem) {
  TempDir dir;
  cli::testing::write_text(dir.file("m.json"), R"({"layers": [{"name": "a", "weight_bytes": -1,
      "activation_bytes": 1}]})");
  const auto result =
      run_npumem("plan recompute " + dir.file("m.json").string() + " --budget 1MiB", dir);
  EXPECT_EQ(result.exit_code, cli::kExitBadInput);
  EXPECT_NE(result.err.find("layers[0].weight_bytes"), std::string::npos) << result.err;
}

}  // namespace
}  // namespace npumem::plan
