// `npumem replay --record` then `npumem viz`, and the page drawn by headless Chromium.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "run_npumem.h"

namespace npumem::cli {
namespace {

using testing::read_file;
using testing::run_npumem;

constexpr const char* kChromium = "/usr/bin/chromium";

std::filesystem::path scratch() {
  const auto dir =
      std::filesystem::temp_directory_path() / ("npumem_viz_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

// The DOM after the page's scripts ran, as headless Chromium prints it.
std::string rendered_dom(const std::string& page, const std::filesystem::path& dir) {
  const auto profile = dir / "chromium-profile";
  const auto dom = dir / "dom.html";
  const std::string command =
      std::string("timeout 120 ") + kChromium +
      " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run"
      " --disable-background-networking --disable-component-update --disable-sync"
      " --user-data-dir=" +
      profile.string() + " --dump-dom 'file://" + page + "' >" + dom.string() + " 2>/dev/null";
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  return read_file(dom);
}

TEST(VizCliTest, RecordedReplayBecomesATimelineThatChromiumDraws) {
  const auto dir = scratch();
  const auto snapshot = dir / "snapshot.json";
  const auto page = dir / "timeline.html";
  const std::string trace = std::string(NPUMEM_SHARED_DIR) + "/traces/vit_b_16_infer.trace";
  if (!std::filesystem::exists(trace)) GTEST_SKIP() << "no " << trace;
  const auto replay = run_npumem("replay " + trace + " --record " + snapshot.string());
  ASSERT_EQ(replay.exit_code, 0) << replay.err;
  EXPECT_NE(replay.err.find("history events written to"), std::string::npos) << replay.err;
  const auto viz = run_npumem("viz " + snapshot.string() + " -o " + page.string());
  ASSERT_EQ(viz.exit_code, 0) << viz.err;
  EXPECT_NE(viz.out.find("timeline written to"), std::string::npos);

  if (!std::filesystem::exists(kChromium)) {
    std::filesystem::remove_all(dir);
    GTEST_SKIP() << "no " << kChromium << ": the page was written but not rendered";
  }
  const std::string dom = rendered_dom(page.string(), dir);
  EXPECT_NE(dom.find("data-rendered=\"ok\""), std::string::npos) << dom.substr(0, 2000);
  EXPECT_EQ(dom.find("data-error"), std::string::npos);
  const std::string marker = "data-plotted=\"";
  const std::size_t plotted = dom.find(marker);
  ASSERT_NE(plotted, std::string::npos);
  EXPECT_GT(std::stoul(dom.substr(plotted + marker.size())), 100u);
  // The largest-blocks table has rows beyond its header.
  EXPECT_NE(dom.find("allocated at event"), std::string::npos);
  EXPECT_NE(dom.find(" MiB</td>"), std::string::npos);
  // Every column draws its highest moment: the drawn peak is the allocator's peak.
  const auto recorded = nlohmann::json::parse(read_file(snapshot));
  EXPECT_NE(
      dom.find("data-drawn-peak=\"" +
               std::to_string(recorded["stats"]["allocated_bytes.all.peak"].get<std::uint64_t>()) +
               "\""),
      std::string::npos);
  EXPECT_NE(dom.find("id=\"config\">config: the defaults<"), std::string::npos);
  EXPECT_NE(dom.find("data-ooms=\"0\""), std::string::npos);
  std::filesystem::remove_all(dir);
}

// A script that reset the peaks (each epoch) leaves a lower peak in the statistics than
// the history drew: the header read 4.00 MiB over a drawn 32.0 MiB.
TEST(VizCliTest, TheHeaderGivesTheHistorysPeakWhenTheStatisticsWereReset) {
  if (!std::filesystem::exists(kChromium)) GTEST_SKIP() << "no " << kChromium;
  const auto dir = scratch();
  const auto trace = dir / "reset.trace";
  std::ofstream(trace) << "a 1 1024\na 2 5120\nf 2\n";
  const auto snapshot = dir / "snapshot.json";
  const auto page = dir / "timeline.html";
  ASSERT_EQ(run_npumem("replay " + trace.string() + " --record " + snapshot.string()).exit_code, 0);
  auto recorded = nlohmann::json::parse(read_file(snapshot));
  recorded["stats"]["allocated_bytes.all.peak"] = 1024;  // as reset_peak_memory_stats() leaves it
  std::ofstream(snapshot) << recorded.dump();
  ASSERT_EQ(run_npumem("viz " + snapshot.string() + " -o " + page.string()).exit_code, 0);
  const std::string dom = rendered_dom(page.string(), dir);
  EXPECT_NE(dom.find("peak allocated 6.00 KiB"), std::string::npos) << dom.substr(0, 2000);
  EXPECT_NE(dom.find("(the statistics' peaks, reset since: 1.00 KiB allocated)"), std::string::npos)
      << dom.substr(0, 2000);
  std::filesystem::remove_all(dir);
}

TEST(VizCliTest, APoolFilterDrawsThatPoolAloneWithItsQuota) {
  if (!std::filesystem::exists(kChromium)) GTEST_SKIP() << "no " << kChromium;
  const auto dir = scratch();
  const auto trace = dir / "pools.trace";
  std::ofstream(trace) << "p a\na 1 1024\np b\na 2 5120\nf 2\np a\na 3 2048\n";
  const auto snapshot = dir / "snapshot.json";
  const auto page = dir / "timeline.html";
  ASSERT_EQ(run_npumem("replay " + trace.string() + " --quota a=4MiB --record " + snapshot.string())
                .exit_code,
            0);
  ASSERT_EQ(run_npumem("viz " + snapshot.string() + " -o " + page.string()).exit_code, 0);
  const std::string all = rendered_dom(page.string(), dir);
  EXPECT_NE(all.find("data-drawn-peak=\"6144\""), std::string::npos) << all.substr(0, 1500);
  EXPECT_NE(all.find("<option value=\"a\">a (quota 4.00 MiB)</option>"
                     "<option value=\"b\">b</option>"),
            std::string::npos)
      << all.substr(0, 3000);
  EXPECT_NE(all.find("data-quota=\"0\""), std::string::npos) << "all pools: no quota line";
  const std::string pool_a = rendered_dom(page.string() + "#pool=a", dir);
  EXPECT_NE(pool_a.find("data-pool=\"a\""), std::string::npos) << pool_a.substr(0, 1500);
  EXPECT_NE(pool_a.find("data-drawn-peak=\"3072\""), std::string::npos) << pool_a.substr(0, 1500);
  EXPECT_NE(pool_a.find("data-quota=\"4194304\""), std::string::npos) << pool_a.substr(0, 1500);
  std::filesystem::remove_all(dir);
}

// A pool whose only event is its out of memory: it was missing from the selector, and
// its OOM mark was drawn over every other pool.
TEST(VizCliTest, APoolThatOnlyRanOutOfMemoryIsListedAndItsOomIsItsOwn) {
  if (!std::filesystem::exists(kChromium)) GTEST_SKIP() << "no " << kChromium;
  const auto dir = scratch();
  const auto trace = dir / "oom.trace";
  std::ofstream(trace) << "p a\na 1 1024\np b\na 2 2000000000\n";
  const auto snapshot = dir / "snapshot.json";
  const auto page = dir / "timeline.html";
  ASSERT_EQ(run_npumem("replay " + trace.string() + " --device sim:hbm=1GiB,ddr=0 --record " +
                       snapshot.string())
                .exit_code,
            3);
  ASSERT_EQ(run_npumem("viz " + snapshot.string() + " -o " + page.string()).exit_code, 0);
  const std::string all = rendered_dom(page.string(), dir);
  EXPECT_NE(all.find("<option value=\"b\">b</option>"), std::string::npos) << all.substr(0, 1500);
  EXPECT_NE(all.find("data-ooms=\"1\""), std::string::npos) << all.substr(0, 1500);
  const std::string pool_b = rendered_dom(page.string() + "#pool=b", dir);
  EXPECT_NE(pool_b.find("data-pool=\"b\""), std::string::npos) << pool_b.substr(0, 1500);
  EXPECT_NE(pool_b.find("data-ooms=\"1\""), std::string::npos) << pool_b.substr(0, 1500);
  const std::string pool_a = rendered_dom(page.string() + "#pool=a", dir);
  EXPECT_NE(pool_a.find("data-ooms=\"0\""), std::string::npos) << pool_a.substr(0, 1500);
  std::filesystem::remove_all(dir);
}

TEST(VizCliTest, ADeviceSelectorDrawsOneSnapshotOfSeveral) {
  if (!std::filesystem::exists(kChromium)) GTEST_SKIP() << "no " << kChromium;
  const auto dir = scratch();
  const auto first_trace = dir / "first.trace";
  const auto second_trace = dir / "second.trace";
  std::ofstream(first_trace) << "a 1 1024\na 2 5120\nf 2\n";
  std::ofstream(second_trace) << "a 1 4096\na 2 4096\n";
  const auto first = dir / "first.json";
  const auto second = dir / "second.json";
  ASSERT_EQ(run_npumem("replay " + first_trace.string() + " --device sim:hbm=1GiB --record " +
                       first.string())
                .exit_code,
            0);
  ASSERT_EQ(run_npumem("replay " + second_trace.string() + " --device sim:hbm=2GiB --record " +
                       second.string())
                .exit_code,
            0);
  const auto page = dir / "timeline.html";
  ASSERT_EQ(run_npumem("viz " + first.string() + " " + second.string() + " -o " + page.string())
                .exit_code,
            0);
  const std::string shown_first = rendered_dom(page.string(), dir);
  EXPECT_NE(shown_first.find("data-device=\"0\""), std::string::npos)
      << shown_first.substr(0, 1500);
  EXPECT_NE(shown_first.find("data-drawn-peak=\"6144\""), std::string::npos);
  EXPECT_NE(shown_first.find(">0: sim"), std::string::npos);
  EXPECT_NE(shown_first.find(">1: sim"), std::string::npos);
  const std::string shown_second = rendered_dom(page.string() + "#device=1", dir);
  EXPECT_NE(shown_second.find("data-device=\"1\""), std::string::npos)
      << shown_second.substr(0, 1500);
  EXPECT_NE(shown_second.find("data-drawn-peak=\"8192\""), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(VizCliTest, TheTimelineMarksOomsDroppedEventsAndNonDefaultSettings) {
  if (!std::filesystem::exists(kChromium)) GTEST_SKIP() << "no " << kChromium;
  const auto dir = scratch();
  const auto snapshot = dir / "snapshot.json";
  const auto page = dir / "timeline.html";
  const std::string trace = std::string(NPUMEM_SHARED_DIR) + "/traces/vit_b_16_infer.trace";
  if (!std::filesystem::exists(trace)) GTEST_SKIP() << "no " << trace;
  const auto replay =
      run_npumem("replay " + trace + " --device sim:hbm=200MiB,ddr=0" +
                 " --conf granule:1024 --history-entries 2000 --record " + snapshot.string());
  ASSERT_EQ(replay.exit_code, 3) << replay.err;  // out of memory
  ASSERT_EQ(run_npumem("viz " + snapshot.string() + " -o " + page.string()).exit_code, 0);
  const std::string dom = rendered_dom(page.string(), dir);
  EXPECT_NE(dom.find("data-rendered=\"ok\""), std::string::npos) << dom.substr(0, 2000);
  EXPECT_NE(dom.find("data-ooms=\"1\""), std::string::npos) << dom.substr(0, 2000);
  EXPECT_NE(dom.find("id=\"config\">config: granule:1024<"), std::string::npos)
      << dom.substr(0, 2000);
  EXPECT_NE(dom.find("The history ring dropped the "), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(VizCliTest, BadSnapshotsGetAClearError) {
  const auto dir = scratch();
  const auto not_json = dir / "not.json";
  std::ofstream(not_json) << "{ this is not json";
  const auto other = dir / "other.json";
  std::ofstream(other) << R"({"format": "something else"})";
  const auto page = (dir / "out.html").string();

  const auto broken = run_npumem("viz " + not_json.string() + " -o " + page);
  EXPECT_EQ(broken.exit_code, 2);
  EXPECT_NE(broken.err.find("is not an npumem snapshot: it is not JSON (parse error at line 1"),
            std::string::npos)
      << broken.err;
  EXPECT_EQ(broken.err.find("json.exception"), std::string::npos) << broken.err;
  EXPECT_NE(broken.err.find("--record"), std::string::npos) << broken.err;
  const auto foreign = run_npumem("viz " + other.string() + " -o " + page);
  EXPECT_EQ(foreign.exit_code, 2);
  EXPECT_NE(foreign.err.find("not an npumem snapshot"), std::string::npos) << foreign.err;
  EXPECT_EQ(run_npumem("viz " + (dir / "missing.json").string() + " -o " + page).exit_code, 2);
  // JSON npumem does not read is not called "not JSON", and no library id shows.
  const auto deep = dir / "deep.json";
  std::ofstream(deep) << std::string(300, '[') << std::string(300, ']');
  const auto nested = run_npumem("viz " + deep.string() + " -o " + page);
  EXPECT_EQ(nested.exit_code, 2);
  EXPECT_NE(nested.err.find("JSON nested deeper than 256 levels"), std::string::npos) << nested.err;
  EXPECT_EQ(nested.err.find("it is not JSON"), std::string::npos) << nested.err;
  const auto huge = dir / "huge.json";
  std::ofstream(huge) << R"({"format": "npumem.snapshot", "version": 1e400})";
  const auto overflow = run_npumem("viz " + huge.string() + " -o " + page);
  EXPECT_EQ(overflow.exit_code, 2);
  EXPECT_NE(overflow.err.find("1e400"), std::string::npos) << overflow.err;
  EXPECT_EQ(overflow.err.find("json.exception"), std::string::npos) << overflow.err;
  std::filesystem::remove_all(dir);
}

// An output that is one of the inputs (or the other output) was overwritten, exit 0: the
// snapshot lost to the Chrome trace, the trace or the snapshot to the page.
TEST(VizCliTest, OutputsThatWouldOverwriteAnInputOrEachOtherAreRefused) {
  const auto dir = scratch();
  const auto trace = dir / "t.trace";
  std::ofstream(trace) << "a 1 4096\nf 1\n";
  const auto snapshot = (dir / "s.json").string();
  ASSERT_EQ(run_npumem("replay " + trace.string() + " --record " + snapshot).exit_code, 0);
  const std::string recorded = read_file(snapshot);
  const std::pair<std::string, std::string> cases[] = {
      {"replay " + trace.string() + " --record " + (dir / "x.json").string() + " --chrome-trace " +
           (dir / "." / "x.json").string(),
       "--chrome-trace " + (dir / "." / "x.json").string() + " is the file of --record"},
      {"replay " + trace.string() + " --record " + trace.string(),
       "--record " + trace.string() + " is the file of the trace"},
      {"replay " + trace.string() + " --record ''", "an empty path names no file to write"},
      {"viz " + snapshot + " -o " + snapshot,
       "--output " + snapshot + " is the file of a snapshot"},
      // One device's snapshot drawn as two devices.
      {"viz " + snapshot + " " + (dir / "." / "s.json").string() + " -o " +
           (dir / "two.html").string(),
       "snapshot " + (dir / "." / "s.json").string() + " is given twice"},
  };
  for (const auto& [command, message] : cases) {
    const auto run = run_npumem(command);
    EXPECT_EQ(run.exit_code, 2) << command;
    EXPECT_NE(run.err.find(message), std::string::npos) << command << "\n" << run.err;
  }
  EXPECT_EQ(read_file(trace), "a 1 4096\nf 1\n");
  EXPECT_EQ(read_file(snapshot), recorded);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace npumem::cli
