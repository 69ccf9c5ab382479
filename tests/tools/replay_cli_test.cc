// `npumem replay` as a user runs it: the built binary on the shared traces and on
// small traces written here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <unordered_map>

#include "run_npumem.h"

namespace npumem::cli {
namespace {

using testing::run_npumem;

const std::filesystem::path kSharedTraces = NPUMEM_SHARED_DIR "/traces";
const char* const kSharedTraceNames[] = {"resnet50_train", "mobilenet_v2_infer", "vit_b_16_infer",
                                         "bert_train_dynpad"};

// The peak of live requested bytes, read straight from the text (not through trace.h).
std::uint64_t peak_live_bytes_of_file(const std::filesystem::path& path) {
  std::ifstream file(path);
  std::unordered_map<std::string, std::uint64_t> live;
  std::uint64_t total = 0;
  std::uint64_t peak = 0;
  for (std::string line; std::getline(file, line);) {
    std::istringstream fields(line);
    std::string op, id;
    std::uint64_t bytes = 0;
    fields >> op >> id;
    if (op == "a" && fields >> bytes) {
      live[id] = bytes;
      total += bytes;
      peak = std::max(peak, total);
    } else if (op == "f") {
      total -= live[id];
      live.erase(id);
    }
  }
  return peak;
}

class TempTrace {
 public:
  explicit TempTrace(const std::string& text)
      : path_(std::filesystem::temp_directory_path() /
              ("npumem_replay_cli_" + std::to_string(::getpid()) + "_" +
               std::to_string(counter_++) + ".trace")) {
    std::ofstream(path_) << text;
  }
  ~TempTrace() { std::filesystem::remove(path_); }
  std::string path() const { return path_.string(); }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

// Three 12 MiB requests: above large_segment_threshold, each gets its own segment.
const std::string kThreeLarge = "a 1 12582912\na 2 12582912\na 3 12582912\n";

TEST(ReplayCliTest, ReportsPeakRequestedEqualToTheTracePeakOnEverySharedTrace) {
  if (!std::filesystem::exists(kSharedTraces)) GTEST_SKIP() << "no " << kSharedTraces;
  for (const char* name : kSharedTraceNames) {
    const auto path = kSharedTraces / (std::string(name) + ".trace");
    const auto run = run_npumem("replay " + path.string() + " --json");
    ASSERT_EQ(run.exit_code, 0) << name << ": " << run.err;
    const auto json = nlohmann::json::parse(run.out);
    EXPECT_EQ(json["peak_requested_bytes"].get<std::uint64_t>(), peak_live_bytes_of_file(path))
        << name;
    EXPECT_EQ(json["completed"], true) << name;
    EXPECT_GE(json["overhead_ratio"].get<double>(), 1.0) << name;
  }
}

TEST(ReplayCliTest, JsonHasTheDocumentedFields) {
  const TempTrace trace("# small\na 1 1000\na 2 2000\nf 1\n");
  const auto run = run_npumem("replay " + trace.path() + " --json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto json = nlohmann::json::parse(run.out);
  for (const char* key : {"events", "allocations", "peak_requested_bytes", "peak_reserved_bytes",
                          "overhead_ratio", "spills", "reclaims", "ooms", "ns_per_event"}) {
    EXPECT_TRUE(json.contains(key)) << key;
  }
  for (const char* tier : {"hbm", "ddr"}) {
    for (const char* key : {"capacity_bytes", "peak_reserved_bytes", "peak_allocated_bytes"}) {
      EXPECT_TRUE(json["tiers"][tier].contains(key)) << tier << "." << key;
    }
  }
  EXPECT_EQ(json["events"], 3);
  EXPECT_EQ(json["allocations"], 2);
  EXPECT_EQ(json["peak_requested_bytes"], 3000);
  EXPECT_EQ(json["tiers"]["hbm"]["capacity_bytes"], 64ull << 30);  // the sim default
}

TEST(ReplayCliTest, PrintsAReadableReportByDefault) {
  const TempTrace trace("a 1 1000\n");
  const auto run = run_npumem("replay " + trace.path());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  for (const char* label : {"peak requested", "peak reserved", "overhead ratio", "spills",
                            "reclaims", "OOMs", "ns per event", "hbm", "ddr"}) {
    EXPECT_NE(run.out.find(label), std::string::npos) << label << " in\n" << run.out;
  }
  EXPECT_EQ(run.err, "");  // no progress bar when stderr is not a terminal
}

TEST(ReplayCliTest, ASmallHbmSpillsToDdr) {
  const TempTrace trace(kThreeLarge);
  const auto run =
      run_npumem("replay " + trace.path() + " --device sim:hbm=16MiB,ddr=64MiB --json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto json = nlohmann::json::parse(run.out);
  EXPECT_GT(json["spills"].get<int>(), 0);
  EXPECT_GT(json["tiers"]["ddr"]["peak_allocated_bytes"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(json["completed"], true);
}

TEST(ReplayCliTest, ATooSmallDeviceExitsThreeWithTheExplanation) {
  const TempTrace trace(kThreeLarge);
  const auto run = run_npumem("replay " + trace.path() + " --device sim:hbm=16MiB,ddr=16MiB");
  EXPECT_EQ(run.exit_code, 3);
  EXPECT_NE(run.err.find("out of memory"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("hbm"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("ddr"), std::string::npos) << run.err;
  EXPECT_NE(run.out.find("stopped by out of memory"), std::string::npos) << run.out;
  // The moment's advice cannot fit a trace whose live tensors pass the device: said.
  EXPECT_NE(run.err.find("the trace's live tensors peak at 36.0 MiB, more than the 32.0 MiB "
                         "the device holds (hbm and ddr): no strategy or setting fits it"),
            std::string::npos)
      << run.err;
  const auto fits = run_npumem("replay " + trace.path() + " --device sim:hbm=36MiB,ddr=0");
  EXPECT_EQ(fits.err.find("live tensors peak"), std::string::npos) << fits.err;
}

TEST(ReplayCliTest, AMalformedTraceExitsTwoNamingFileAndLine) {
  const TempTrace trace("a 1 100\n# fine\nf 2\n");
  const auto run = run_npumem("replay " + trace.path());
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find(trace.path() + ":3: free of unknown id 2"), std::string::npos) << run.err;
  EXPECT_EQ(run.out, "");
}

TEST(ReplayCliTest, BadOptionsExitTwo) {
  const TempTrace trace("a 1 100\n");
  EXPECT_EQ(run_npumem("replay /nonexistent.trace").exit_code, 2);
  EXPECT_EQ(run_npumem("replay " + trace.path() + " --strategy greedy").exit_code, 2);
  const auto bad_device = run_npumem("replay " + trace.path() + " --device sim:hbm=lots");
  EXPECT_EQ(bad_device.exit_code, 2);
  EXPECT_NE(bad_device.err.find("hbm"), std::string::npos) << bad_device.err;
  const auto bad_conf = run_npumem("replay " + trace.path() + " --conf no_such_knob:1");
  EXPECT_EQ(bad_conf.exit_code, 2);
  EXPECT_NE(bad_conf.err.find("no_such_knob"), std::string::npos) << bad_conf.err;
  // The strategy that disagrees came from --strategy: it said "--conf: strategy:planned".
  const auto both =
      run_npumem("replay " + trace.path() + " --strategy planned --conf expandable_segments:true");
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_NE(both.err.find("--strategy planned and expandable_segments:true (in --conf"),
            std::string::npos)
      << both.err;
}

// `p` lines under the static strategy: each pool gets an arena (a quota) measured from
// its own allocations; --advise says what quota each pool needs.
TEST(ReplayCliTest, TracesWithPoolsRunUnderTheStaticStrategyAndGetPoolAdvice) {
  const TempTrace trace("a 1 1000\np encoder\na 2 3000000\nf 2\nf 1\n");
  const auto replay =
      run_npumem("replay " + trace.path() + " --strategy static --conf static_size:4MiB --json");
  ASSERT_EQ(replay.exit_code, 0) << replay.err;
  const auto json = nlohmann::json::parse(replay.out);
  EXPECT_GE(json.at("pools").at("encoder").at("quota_bytes").get<std::uint64_t>(), 3000000u)
      << replay.out;

  const auto advise = run_npumem("replay " + trace.path() + " --advise 10 --json");
  ASSERT_EQ(advise.exit_code, 0) << advise.err;
  const auto pools = nlohmann::json::parse(advise.out).at("static_advice").at("pools");
  ASSERT_EQ(pools.size(), 1u) << advise.out;
  EXPECT_EQ(pools.at(0).at("pool"), "encoder");
  EXPECT_GE(pools.at(0).at("recommended_quota").get<std::uint64_t>(), 3000000u);

  const auto compare = run_npumem("compare " + trace.path());
  EXPECT_EQ(compare.exit_code, 0) << compare.err;
  EXPECT_NE(compare.out.find("pool 'encoder'"), std::string::npos) << compare.out;
}

// A pool's quota from the command line: --advise recommended quotas the replay could
// not apply. Over it, the pool runs out of memory; the table shows it.
TEST(ReplayCliTest, QuotaGivesATracesPoolItsQuota) {
  const TempTrace trace("a 1 1000\np encoder\na 2 3000000\na 3 3000000\nf 2\nf 3\nf 1\n");
  const auto within = run_npumem("replay " + trace.path() + " --quota encoder=64MiB");
  ASSERT_EQ(within.exit_code, 0) << within.err;
  EXPECT_NE(within.out.find("64.0 MiB"), std::string::npos) << within.out;
  const auto json = run_npumem("replay " + trace.path() + " --quota encoder=64MiB --json");
  EXPECT_EQ(nlohmann::json::parse(json.out).at("pools").at("encoder").at("quota_bytes"), 64u << 20)
      << json.out;
  const auto over = run_npumem("replay " + trace.path() + " --quota encoder=4MiB");
  EXPECT_EQ(over.exit_code, 3) << over.out;
  EXPECT_NE(over.err.find("pool 'encoder'"), std::string::npos) << over.err;
  const std::pair<std::string, std::string> bad[] = {
      {"--quota decoder=1GiB", "--quota decoder: " + trace.path() + " has no pool of that name"},
      {"--quota default=1GiB", "the default pool has no quota"},
      {"--quota encoder", "expected NAME=SIZE"},
      {"--quota encoder=lots", "--quota encoder: bad size 'lots'"},
      {"--quota encoder=1GiB --quota encoder=2GiB", "--quota encoder: given twice"},
      {"--quota encoder=0", "--quota encoder=0: a quota of 0 is none"},
  };
  for (const auto& [option, message] : bad) {
    const auto run = run_npumem("replay " + trace.path() + " " + option);
    EXPECT_EQ(run.exit_code, 2) << option;
    EXPECT_NE(run.err.find(message), std::string::npos) << option << ": " << run.err;
  }
}

// A recording's `p` line carries the pool's quota: replay and compare apply it, and
// --quota overrides it.
TEST(ReplayCliTest, APoolLinesQuotaIsThePoolsUnlessQuotaSaysOtherwise) {
  const TempTrace trace("a 1 1000\np encoder 4194304\na 2 3000000\na 3 3000000\nf 2\nf 3\n");
  const auto capped = run_npumem("replay " + trace.path());
  EXPECT_EQ(capped.exit_code, 3) << capped.out;
  EXPECT_NE(capped.err.find("pool 'encoder'"), std::string::npos) << capped.err;
  const auto json = run_npumem("replay " + trace.path() + " --quota encoder=64MiB --json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(nlohmann::json::parse(json.out).at("pools").at("encoder").at("quota_bytes"), 64u << 20);
  const auto compare = run_npumem("compare --json " + trace.path());
  EXPECT_EQ(compare.exit_code, 3) << "no strategy fits the trace's quota: " << compare.out;
}

// Said once, whatever the number of strategies compared: replay said it, compare did not.
TEST(ReplayCliTest, CompareSaysAQuotaIsNotWholeGranulesOnce) {
  const TempTrace trace("p encoder\na 1 1000\nf 1\n");
  const auto compare = run_npumem("compare " + trace.path() + " --quota encoder=5MiB");
  ASSERT_EQ(compare.exit_code, 0) << compare.err;
  const std::string said = "npumem: warning: pool 'encoder': a quota of 5.00 MiB";
  const std::size_t first = compare.err.find(said);
  EXPECT_NE(first, std::string::npos) << compare.err;
  EXPECT_EQ(compare.err.find(said, first + 1), std::string::npos) << compare.err;
}

// A model unloaded and another loaded in its pool's name (`r` line): the pool is made
// anew with the new quota, and the first one's figures stay in the report.
TEST(ReplayCliTest, APoolRemovedAndMadeAnewKeepsBothInTheReport) {
  const TempTrace trace(
      "p model 8388608\na 1 6000000\nf 1\nr model\np model 4194304\na 2 3000000\nf 2\n");
  const auto run = run_npumem("replay --json " + trace.path());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto pools = nlohmann::json::parse(run.out).at("pools");
  EXPECT_EQ(pools.at("model (removed)").at("quota_bytes"), 8u << 20) << pools;
  EXPECT_EQ(pools.at("model (removed)").at("peak_requested_bytes"), 6000000u) << pools;
  EXPECT_EQ(pools.at("model").at("quota_bytes"), 4u << 20) << pools;
  EXPECT_EQ(pools.at("model").at("peak_requested_bytes"), 3000000u) << pools;
  const auto text = run_npumem("replay " + trace.path());
  EXPECT_NE(text.out.find("model (removed)"), std::string::npos) << text.out;
}

// Under the static strategy a pool's arena is its quota: the pool made anew took the
// first quota (20 MiB, not 40), and its 28.6 MiB request ran out of memory; compare too.
TEST(ReplayCliTest, APoolMadeAnewUnderStaticTakesItsNewQuota) {
  const TempTrace trace("p m 20971520\na 1 8388608\nf 1\nr m\np m 41943040\na 2 30000000\nf 2\n");
  const auto run =
      run_npumem("replay --json --strategy static --conf static_size:4MiB " + trace.path());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto pools = nlohmann::json::parse(run.out).at("pools");
  EXPECT_EQ(pools.at("m (removed)").at("quota_bytes"), 20u << 20) << pools;
  EXPECT_EQ(pools.at("m").at("quota_bytes"), 40u << 20) << pools;
  const auto compare = run_npumem("compare --json " + trace.path());
  ASSERT_EQ(compare.exit_code, 0) << compare.err;
  const auto rows = nlohmann::json::parse(compare.out);
  for (const auto& row : rows.at("strategies")) {
    EXPECT_TRUE(row.at("completed").get<bool>()) << row;
  }
}

// Options that only shape another's output are refused alone (they did nothing), and
// CLI11's refusals read as every other error does.
TEST(ReplayCliTest, OptionsThatNeedAnotherAreRefusedWithoutIt) {
  const TempTrace trace(kThreeLarge);
  const std::pair<std::string, std::string> alone[] = {
      {"--history-entries 5",
       "npumem: --history-entries: sizes the history --record and "
       "--chrome-trace write; give one of them"},
      {"--leak-threshold 0.3", "npumem: --leak-threshold requires --leak-check"},
      {"--strategy bogus", "npumem: --strategy: bogus not in {caching,expandable,static,planned}"},
  };
  for (const auto& [option, message] : alone) {
    const auto run = run_npumem("replay " + trace.path() + " " + option);
    EXPECT_EQ(run.exit_code, 2) << option;
    EXPECT_NE(run.err.find(message), std::string::npos) << option << ": " << run.err;
  }
  const auto missing = run_npumem("replay /nonexistent/x.trace");
  EXPECT_NE(missing.err.find("npumem: trace: File does not exist: /nonexistent/x.trace"),
            std::string::npos)
      << missing.err;
  const auto record = std::filesystem::temp_directory_path() / "npumem_history_entries.json";
  const auto with =
      run_npumem("replay " + trace.path() + " --history-entries 2 --record " + record.string());
  EXPECT_EQ(with.exit_code, 0) << with.err;
  std::filesystem::remove(record);
}

// --advise is how a static arena gets its size: with no static_size the replay uses it.
TEST(ReplayCliTest, StaticWithoutASizeReplaysInTheAdvisedArena) {
  const TempTrace trace(kThreeLarge);
  const auto run = run_npumem("replay " + trace.path() + " --strategy static --advise 10 --json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto json = nlohmann::json::parse(run.out);
  EXPECT_EQ(json.at("peak_reserved_bytes"), json.at("static_advice").at("recommended_static_size"))
      << run.out;
  const auto unsized = run_npumem("replay " + trace.path() + " --strategy static");
  EXPECT_EQ(unsized.exit_code, 2);
  EXPECT_NE(unsized.err.find("--strategy static needs static_size"), std::string::npos)
      << unsized.err;
  EXPECT_NE(unsized.err.find("--advise finds one"), std::string::npos) << unsized.err;
}

// With pools, every arena is the advised one: the pools ran in their smallest arenas
// while the default pool got its margin, and a default pool nothing allocates in was
// advised a second granule for its margin.
TEST(ReplayCliTest, StaticWithoutASizeReplaysEveryPoolInItsAdvisedArena) {
  const TempTrace trace("p encoder\na 1 5000000\np decoder\na 2 3000000\nf 1\nf 2\n");
  const auto run = run_npumem("replay " + trace.path() + " --strategy static --advise 50 --json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto json = nlohmann::json::parse(run.out);
  const auto& advice = json.at("static_advice");
  EXPECT_EQ(advice.at("recommended_static_size"), advice.at("min_arena_bytes")) << run.out;
  std::uint64_t arenas = advice.at("recommended_static_size").get<std::uint64_t>();
  for (const auto& pool : advice.at("pools")) {
    const auto name = pool.at("pool").get<std::string>();
    EXPECT_EQ(json.at("pools").at(name).at("quota_bytes"), pool.at("recommended_quota")) << name;
    EXPECT_GT(pool.at("recommended_quota"), pool.at("min_arena_bytes")) << name;
    arenas += pool.at("recommended_quota").get<std::uint64_t>();
  }
  EXPECT_EQ(json.at("peak_reserved_bytes").get<std::uint64_t>(), arenas) << run.out;
  EXPECT_EQ(advice.at("all_arenas_recommended_bytes").get<std::uint64_t>(), arenas) << run.out;
  // Arenas that each fit but not together: said as their sum, not as "lower the quota of
  // pool 'decoder'", which --advise had chosen itself.
  const auto small = run_npumem("replay " + trace.path() +
                                " --device sim:hbm=10MiB,ddr=0 --strategy static --advise");
  EXPECT_EQ(small.exit_code, 2) << small.err;  // no arena to replay in
  EXPECT_NE(small.err.find("the static arenas need 12.0 MiB together (default 2.00 MiB, "
                           "'encoder' 6.00 MiB, 'decoder' 4.00 MiB), more than the device's HBM "
                           "(10.0 MiB)"),
            std::string::npos)
      << small.out << small.err;
}

// A static arena the device cannot hold stops the replay before its first event: the
// report says so, and its figures are those of no event (not the whole trace's peak).
TEST(ReplayCliTest, AStaticArenaTooLargeForTheDeviceSaysTheReplayCouldNotStart) {
  const TempTrace trace(kThreeLarge);
  const std::string command =
      "replay " + trace.path() + " --device sim:hbm=64MiB,ddr=0 --conf static_size:128MiB";
  const auto text = run_npumem(command + " --strategy static");
  EXPECT_EQ(text.exit_code, 3);
  EXPECT_NE(text.out.find("could not start, out of memory before the first event"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.err.find("static arena of 128 MiB"), std::string::npos) << text.err;
  const auto json = run_npumem(command + " --strategy static --json");
  const auto parsed = nlohmann::json::parse(json.out);
  EXPECT_EQ(parsed.at("started"), false);
  EXPECT_EQ(parsed.at("events_replayed"), 0);
  EXPECT_EQ(parsed.at("peak_requested_bytes"), 0);
}

// Every allocation in a named pool: the default pool's arena serves nothing, so the
// static strategy runs on the pools' quotas without a static_size.
TEST(ReplayCliTest, StaticWithEveryAllocationInNamedPoolsNeedsNoStaticSize) {
  const TempTrace trace("p encoder\na 1 1048576\np decoder\na 2 2097152\nf 1\nf 2\n");
  const auto run =
      run_npumem("replay " + trace.path() +
                 " --strategy static --quota encoder=4MiB --quota decoder=4MiB --json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto json = nlohmann::json::parse(run.out);
  EXPECT_EQ(json.at("pools").at("default").at("peak_allocated_bytes"), 0);
}

// A static strategy left in the environment is not what the user asked of this command:
// its error says where it came from.
TEST(ReplayCliTest, AnUnsizedStaticStrategySaysWhereItWasSet) {
  const TempTrace trace(kThreeLarge);
  const auto from_environment =
      run_npumem("replay " + trace.path(), "NPUMEM_ALLOC_CONF=strategy:static");
  EXPECT_EQ(from_environment.exit_code, 2);
  EXPECT_NE(from_environment.err.find("NPUMEM_ALLOC_CONF sets strategy:static"), std::string::npos)
      << from_environment.err;
  const auto from_conf = run_npumem("replay " + trace.path() + " --conf strategy:static");
  EXPECT_EQ(from_conf.exit_code, 2);
  EXPECT_NE(from_conf.err.find("--conf sets strategy:static"), std::string::npos) << from_conf.err;
  const auto sized = run_npumem("replay " + trace.path() + " --conf static_size:64MiB",
                                "NPUMEM_ALLOC_CONF=strategy:static");
  EXPECT_EQ(sized.exit_code, 0) << sized.err;
}

// A margin past the HBM the allocator may use is cut to it: the advice was an arena the
// device refused, whose error advised --advise again.
TEST(ReplayCliTest, TheStaticAdviceNeverPassesTheHbm) {
  const TempTrace trace(kThreeLarge);  // 36 MiB live: with 10%, 40 MiB in granules
  const auto advise = run_npumem("replay " + trace.path() + " --advise --conf hbm:38MiB");
  ASSERT_EQ(advise.exit_code, 0) << advise.err;
  EXPECT_NE(advise.out.find("static_size advice    38.0 MiB, all of the device's HBM: less "
                            "than a 10% margin"),
            std::string::npos)
      << advise.out;
  const auto advised = run_npumem("replay " + trace.path() +
                                  " --conf hbm:38MiB,strategy:static,static_size:39845888");
  EXPECT_EQ(advised.exit_code, 0) << advised.err;
}

// An hbm limit in the settings caps the static arena the advice may find, and not the
// HBM the minimum-capacity search tries (36 MiB live: the limit is below it, DDR takes the rest).
TEST(ReplayCliTest, AnHbmLimitCapsTheStaticAdviceButNotTheMinimumHbmSearch) {
  const TempTrace trace(kThreeLarge);
  // The replay completes (DDR takes the rest); no arena does: the report says so, exit 3
  // (it withheld the report, exit 2).
  const auto advise = run_npumem("replay " + trace.path() + " --advise --conf hbm:16MiB");
  EXPECT_EQ(advise.exit_code, 3);
  EXPECT_NE(advise.err.find("--advise: no static arena up to the HBM limit (16.0 MiB)"),
            std::string::npos)
      << advise.err;
  EXPECT_NE(advise.out.find("static_size advice    none: no static arena up to the HBM limit"),
            std::string::npos)
      << advise.out;
  EXPECT_NE(advise.out.find("peak reserved"), std::string::npos) << advise.out;
  const auto json = run_npumem("replay " + trace.path() + " --advise --conf hbm:16MiB --json");
  EXPECT_EQ(json.exit_code, 3);
  EXPECT_NE(nlohmann::json::parse(json.out)
                .at("static_advice")
                .at("failure")
                .get<std::string>()
                .find("no static arena"),
            std::string::npos)
      << json.out;
  const auto compare = run_npumem("compare " + trace.path() + " --conf hbm:16MiB --json");
  ASSERT_EQ(compare.exit_code, 0) << compare.err;
  const auto rows = nlohmann::json::parse(compare.out).at("strategies");
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_GE(rows.at(0).at("min_hbm_capacity_bytes").get<std::uint64_t>(), 36 * 1024 * 1024u)
      << compare.out;
}

// A replay stopped by out of memory reports on what it replayed: its peak requested is
// that part's, and the leak check does not judge a run cut short.
TEST(ReplayCliTest, AStoppedReplayReportsWhatItReplayed) {
  const TempTrace trace("a 1 1048576\ni\na 2 1048576\ni\na 3 68719476736\na 4 1048576\n");
  const auto run =
      run_npumem("replay " + trace.path() + " --device sim:hbm=64MiB,ddr=0 --leak-check --json");
  EXPECT_EQ(run.exit_code, 3) << run.err;
  const auto json = nlohmann::json::parse(run.out);
  EXPECT_EQ(json.at("peak_requested_bytes"), 2 * 1048576) << run.out;
  EXPECT_GE(json.at("overhead_ratio").get<double>(), 1.0) << run.out;
  EXPECT_NE(run.err.find("leak check: not judged: the replay stopped by out of memory"),
            std::string::npos)
      << run.err;
}

// Zero-byte allocations reserve a granule: no ratio to the peak requested means anything.
TEST(ReplayCliTest, NoRatioWhenNoByteWasRequested) {
  const TempTrace trace("a 1 0\ni\na 2 0\nf 1\nf 2\n");
  const auto json_run = run_npumem("replay " + trace.path() + " --json");
  EXPECT_EQ(json_run.exit_code, 0) << json_run.err;
  EXPECT_TRUE(nlohmann::json::parse(json_run.out).at("overhead_ratio").is_null()) << json_run.out;
  const auto text_run = run_npumem("replay " + trace.path());
  EXPECT_NE(text_run.out.find("n/a (no byte requested)"), std::string::npos) << text_run.out;
  const auto compare = run_npumem("compare " + trace.path() + " --json");
  EXPECT_EQ(compare.exit_code, 0) << compare.err;
  const auto json = nlohmann::json::parse(compare.out);
  for (const auto& row : json.at("strategies")) {
    EXPECT_TRUE(row.at("overhead_ratio").is_null()) << compare.out;
    EXPECT_TRUE(row.at("min_hbm_over_peak").is_null()) << compare.out;
  }
}

// Iterations that never repeat: no plan serves, so there is no steady ratio (a 0 read
// as a perfect result).
TEST(ReplayCliTest, NoSteadyRatioWhenNoPlanServed) {
  const TempTrace trace("i\na 1 4096\nf 1\ni\na 2 8192\nf 2\ni\na 3 12288\nf 3\n");
  const auto run = run_npumem("replay " + trace.path() + " --strategy planned --json");
  EXPECT_EQ(run.exit_code, 0) << run.err;
  const auto planned = nlohmann::json::parse(run.out).at("planned");
  EXPECT_TRUE(planned.at("steady_overhead_ratio").is_null()) << run.out;
  EXPECT_TRUE(planned.at("first_served_iteration").is_null()) << run.out;
  EXPECT_TRUE(planned.contains("no_plan_served")) << run.out;
  const auto compare = run_npumem("compare " + trace.path() + " --json");
  const auto rows = nlohmann::json::parse(compare.out);
  for (const auto& row : rows.at("strategies")) {
    if (row.at("strategy") != "planned") continue;
    EXPECT_EQ(row.at("plan_served"), false) << compare.out;
    for (const char* field :
         {"steady_latency_p50_ns", "steady_latency_p99_ns", "steady_latency_max_ns"}) {
      EXPECT_TRUE(row.at(field).is_null()) << field << ": " << compare.out;
    }
  }
}

TEST(ReplayCliTest, CompareExitsOutOfMemoryWhenNoStrategyCompletes) {
  const TempTrace trace("a 1 100\na 2 200000000000000\n");
  const auto compare = run_npumem("compare " + trace.path() + " --device sim:hbm=1GiB,ddr=0");
  EXPECT_EQ(compare.exit_code, 3) << compare.out << compare.err;
  EXPECT_NE(compare.out.find("did not complete"), std::string::npos) << compare.out;
}

TEST(ReplayCliTest, LeakCheckIsSilentOnTheSharedTraces) {
  if (!std::filesystem::exists(kSharedTraces)) GTEST_SKIP() << "no " << kSharedTraces;
  for (const char* name : kSharedTraceNames) {
    const auto path = kSharedTraces / (std::string(name) + ".trace");
    const auto run = run_npumem("replay " + path.string() + " --leak-check");
    EXPECT_EQ(run.exit_code, 0) << name << ": " << run.out << run.err;
    EXPECT_EQ(run.out.find("LEAK"), std::string::npos) << name << ": " << run.out;
  }
}

TEST(ReplayCliTest, LeakCheckExitsFourNamingTheTagOnALeak) {
  const auto run = run_npumem("replay " + std::string(NPUMEM_OBSERVE_DATA_DIR) +
                              "/leaky_loop.trace --leak-check");
  EXPECT_EQ(run.exit_code, 4) << run.err;
  EXPECT_NE(run.out.find("verdict: LEAK SUSPECTED"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("tag 'kv_cache', pool 'default': 10 allocations"), std::string::npos)
      << run.out;
}

TEST(ReplayCliTest, PatternsReportTheSizesAndHowIterationsRepeat) {
  // Two identical iterations, then one with a new size.
  const TempTrace trace(
      "i\na 1 4096\na 2 100\nf 1\nf 2\ni\na 3 4096\na 4 100\nf 3\nf 4\ni\na 5 9999\nf 5\n");
  const auto run = run_npumem("replay --patterns " + trace.path());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("4.00 KiB (4096 B): 2"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("repetition of the previous iteration: 100% 0%\n"), std::string::npos)
      << run.out;
  const auto json = run_npumem("replay --json --patterns " + trace.path());
  ASSERT_EQ(json.exit_code, 0);
  EXPECT_NO_THROW(nlohmann::json::parse(json.out));
  EXPECT_NE(json.err.find("most frequent sizes"), std::string::npos) << json.err;
}

TEST(ReplayCliTest, ConfErrorsNameTheOptionTheyCameFrom) {
  const TempTrace trace("a 1 100\n");
  const auto from_option = run_npumem("replay " + trace.path() + " --conf granule:x");
  EXPECT_EQ(from_option.exit_code, 2);
  EXPECT_NE(from_option.err.find("--conf: bad value 'x' for key 'granule'"), std::string::npos)
      << from_option.err;
  const auto from_environment = run_npumem("replay " + trace.path(), "NPUMEM_ALLOC_CONF=granule:x");
  EXPECT_EQ(from_environment.exit_code, 2);
  EXPECT_NE(from_environment.err.find("NPUMEM_ALLOC_CONF: bad value 'x'"), std::string::npos)
      << from_environment.err;
}

// The options replace the environment's setting of the keys they set, bad or not.
TEST(ReplayCliTest, OptionsOverrideABadEnvironmentSetting) {
  const TempTrace trace("a 1 100\n");
  const std::string bad_environment = "NPUMEM_ALLOC_CONF=strategy:bogus,granule:4096";
  const auto conf =
      run_npumem("replay --json " + trace.path() + " --conf strategy:planned", bad_environment);
  ASSERT_EQ(conf.exit_code, 0) << conf.err;
  EXPECT_EQ(nlohmann::json::parse(conf.out)["strategy"], "planned");
  EXPECT_EQ(nlohmann::json::parse(conf.out)["peak_allocated_bytes"], 4096) << "granule:4096";
  const auto strategy =
      run_npumem("replay --json " + trace.path() + " --strategy expandable", bad_environment);
  ASSERT_EQ(strategy.exit_code, 0) << strategy.err;
  EXPECT_EQ(nlohmann::json::parse(strategy.out)["strategy"], "expandable");
  const auto not_overridden =
      run_npumem("replay " + trace.path() + " --conf granule:512", bad_environment);
  EXPECT_EQ(not_overridden.exit_code, 2);
  EXPECT_NE(not_overridden.err.find("NPUMEM_ALLOC_CONF: bad value 'bogus'"), std::string::npos)
      << not_overridden.err;
  // compare sets each row's strategy itself.
  const auto compare = run_npumem("compare --json " + trace.path(), bad_environment);
  ASSERT_EQ(compare.exit_code, 0) << compare.err;
  EXPECT_NO_THROW(nlohmann::json::parse(compare.out));
}

TEST(ReplayCliTest, AdviseTakesAPercentSignAndNamesItselfOnBadInput) {
  const TempTrace trace(kThreeLarge);
  const auto with_sign = run_npumem("replay --json --advise 10% " + trace.path());
  ASSERT_EQ(with_sign.exit_code, 0) << with_sign.err;
  const auto advice = nlohmann::json::parse(with_sign.out)["static_advice"];
  EXPECT_GE(advice["recommended_static_size"].get<std::uint64_t>(),
            advice["min_arena_bytes"].get<std::uint64_t>() * 11 / 10);
  const auto bad = run_npumem("replay --advise ten " + trace.path());
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(
      bad.err.find(
          "--advise: expects a margin in percent from 0 to 1000 such as 10 or 10%, not 'ten'"),
      std::string::npos)
      << bad.err;
  EXPECT_LT(bad.err.size(), 200u) << bad.err;
  const auto huge = run_npumem("replay --advise 1e308 " + trace.path());
  EXPECT_EQ(huge.exit_code, 2) << "a margin the arena size would overflow on: " << huge.out;
}

TEST(ReplayCliTest, AnUnsupportedFeatureWarnsOnStderr) {
  const TempTrace trace("a 1 100\n");
  const auto run = run_npumem("replay " + trace.path() +
                              " --device sim:vmm=false --conf expandable_segments:true");
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.err.find("npumem: warning: expandable_segments feature is not supported"),
            std::string::npos)
      << run.err;
}

TEST(NpumemCliTest, VersionHelpAndUnknownSubcommands) {
  const auto version = run_npumem("--version");
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_EQ(version.out.rfind("npumem ", 0), 0u) << version.out;
  const auto help = run_npumem("help");
  EXPECT_EQ(help.exit_code, 0) << help.err;
  EXPECT_NE(help.out.find("replay"), std::string::npos) << help.out;
  const auto replay_help = run_npumem("help replay");
  EXPECT_EQ(replay_help.exit_code, 0);
  EXPECT_NE(replay_help.out.find("--advise"), std::string::npos) << replay_help.out;
  const auto shard_help = run_npumem("help plan shard");
  EXPECT_EQ(shard_help.exit_code, 0);
  EXPECT_NE(shard_help.out.find("--hbm"), std::string::npos) << shard_help.out;
  // As `--help` says it ("Usage: replay" and "Usage: shard" were shown).
  EXPECT_NE(replay_help.out.find("Usage: npumem replay "), std::string::npos) << replay_help.out;
  EXPECT_NE(shard_help.out.find("Usage: npumem plan shard "), std::string::npos) << shard_help.out;
  const auto bad_topic = run_npumem("help plan shrad");
  EXPECT_EQ(bad_topic.exit_code, 2);
  EXPECT_NE(bad_topic.err.find("no subcommand 'plan shrad' (subcommands: memory, "),
            std::string::npos)
      << bad_topic.err;
  EXPECT_NE(run_npumem("help replay nosuch")
                .err.find("no subcommand 'replay nosuch' (replay has "
                          "none)"),
            std::string::npos);
  const auto unknown = run_npumem("replya x.trace");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("unknown subcommand 'replya'"), std::string::npos) << unknown.err;
  EXPECT_NE(unknown.err.find("replay, plan"), std::string::npos) << unknown.err;
  const auto nested = run_npumem("plan memroy x.records");
  EXPECT_EQ(nested.exit_code, 2);
  EXPECT_NE(nested.err.find("unknown subcommand 'plan memroy' (subcommands of plan: memory, "),
            std::string::npos)
      << nested.err;
  // A missing one is named with the choices ("A subcommand is required" alone before).
  const auto bare = run_npumem("");
  EXPECT_EQ(bare.exit_code, 2);
  EXPECT_NE(bare.err.find("a subcommand is needed (replay, plan"), std::string::npos) << bare.err;
  const auto plan = run_npumem("plan");
  EXPECT_EQ(plan.exit_code, 2);
  EXPECT_NE(plan.err.find("plan needs a subcommand (memory, shard, recompute; `npumem help "
                          "plan` describes them)"),
            std::string::npos)
      << plan.err;
  const auto options_only = run_npumem("plan --json");
  EXPECT_EQ(options_only.exit_code, 2);
  EXPECT_NE(options_only.err.find("plan needs a subcommand"), std::string::npos)
      << options_only.err;
  EXPECT_EQ(run_npumem("plan --help").exit_code, 0);
}

TEST(ReplayCliTest, StrategyAndConfReachTheAllocator) {
  const TempTrace trace(kThreeLarge);
  const auto run = run_npumem("replay " + trace.path() + " --strategy expandable --json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(nlohmann::json::parse(run.out)["strategy"], "expandable");
  const std::string small_hbm = " --device sim:hbm=16MiB,ddr=64MiB";
  EXPECT_EQ(run_npumem("replay " + trace.path() + small_hbm).exit_code, 0);
  EXPECT_EQ(
      run_npumem("replay " + trace.path() + small_hbm + " --conf spill_to_ddr:false").exit_code, 3);
  const std::string no_spill = "NPUMEM_ALLOC_CONF=spill_to_ddr:false";
  EXPECT_EQ(run_npumem("replay " + trace.path() + small_hbm, no_spill).exit_code, 3);
  // --conf applies over the environment.
  EXPECT_EQ(run_npumem("replay " + trace.path() + small_hbm + " --conf spill_to_ddr:true", no_spill)
                .exit_code,
            0);
}

TEST(ReplayCliTest, MinCapacityNeedsASimDeviceAndSaysSoBeforeReplaying) {
  const TempTrace trace("a 1 100\n");
  const auto run = run_npumem("replay " + trace.path() + " --min-capacity --device host");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find("needs a sim device spec (its hbm is varied), not 'host'"),
            std::string::npos)
      << run.err;
  EXPECT_EQ(run.out, "");
}

TEST(ReplayCliTest, MinCapacityReportsTheSmallestHbm) {
  const TempTrace trace(kThreeLarge);
  const auto run = run_npumem("replay " + trace.path() + " --min-capacity --json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto json = nlohmann::json::parse(run.out);
  const auto capacity = json["min_hbm_capacity_bytes"].get<std::uint64_t>();
  EXPECT_GE(capacity, 3 * 12582912u);
  EXPECT_EQ(capacity % (1u << 20), 0u);
  const auto device = "sim:hbm=" + std::to_string(capacity) + ",ddr=0";
  EXPECT_EQ(run_npumem("replay " + trace.path() + " --device " + device).exit_code, 0);
  const auto smaller = "sim:hbm=" + std::to_string(capacity - (1u << 20)) + ",ddr=0";
  EXPECT_EQ(run_npumem("replay " + trace.path() + " --device " + smaller).exit_code, 3);
}

}  // namespace
}  // namespace npumem::cli
