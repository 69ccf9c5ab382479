#include "replay_observers.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "npumem/errors.h"
#include "npumem/history.h"
#include "npumem/stats_page.h"
#include "trace.h"

namespace npumem::cli {
namespace {

const std::string kLeakyTrace = std::string(NPUMEM_OBSERVE_DATA_DIR) + "/leaky_loop.trace";

std::filesystem::path temp_path(const std::string& name) {
  return std::filesystem::temp_directory_path() /
         ("npumem_observers_" + std::to_string(::getpid()) + "_" + name);
}

ReplayOptions small_device() {
  ReplayOptions options;
  options.device_spec = "sim:hbm=256MiB,ddr=256MiB";
  return options;
}

TEST(ReplayHooks, AreCalledAtStartAtEachIterationMarkerAndAtTheEnd) {
  const Trace trace = parse_trace("a 1 1000\ni\na 2 10\ni\nf 2\n", "hooks.trace");
  ReplayOptions options = small_device();
  int starts = 0;
  std::vector<std::int64_t> at_iterations;
  std::int64_t at_finish = -1;
  options.hooks = {
      [&](Allocator&) { ++starts; },
      [&](Allocator& a) { at_iterations.push_back(a.stats().allocated_bytes.all.current); },
      [&](Allocator& a) { at_finish = a.stats().allocated_bytes.all.current; }};
  replay_trace(trace, options);
  EXPECT_EQ(starts, 1);
  EXPECT_EQ(at_iterations, (std::vector<std::int64_t>{1024, 1536}));
  EXPECT_EQ(at_finish, 1024);
}

TEST(ReplayHooks, TagLinesTagTheFollowingAllocationsAndTheCallersTagReturns) {
  const Trace trace = parse_trace("t encoder\na 1 1000\nt\na 2 10\n", "tags.trace");
  ReplayOptions options = small_device();
  std::shared_ptr<HistoryRecorder> recorder;
  options.hooks.on_start = [&](Allocator& a) { recorder = record_history(a); };
  ScopedMemoryTag mine("caller");
  replay_trace(trace, options);
  std::vector<std::string> tags;
  for (const HistoryEntry& entry : recorder->entries()) {
    if (entry.kind == EventKind::alloc) tags.push_back(entry.tag);
  }
  EXPECT_EQ(tags, (std::vector<std::string>{"encoder", ""}));
  EXPECT_EQ(memory_tag(), "caller");
}

TEST(ReplayObservers, LeakCheckNamesTheTagLeakedEveryIteration) {
  const Trace trace = read_trace(kLeakyTrace);
  ReplayObserverOptions observe;
  observe.leak_check = true;
  ReplayObservers observers(observe, trace);
  ReplayOptions options = small_device();
  options.hooks = observers.hooks();
  replay_trace(trace, options);
  ASSERT_TRUE(observers.leak_report().has_value());
  const LeakReport& report = *observers.leak_report();
  EXPECT_EQ(report.iterations, 11u);  // every `i` line
  EXPECT_EQ(report.judged_iterations, 9u);
  EXPECT_EQ(report.baseline_bytes, (5u << 20) + (64u << 10));  // after the warm-up iteration
  EXPECT_EQ(report.leaked_bytes, 9u * (64u << 10));
  EXPECT_TRUE(report.leaking);
  ASSERT_EQ(report.survivors.size(), 2u);  // recurring first
  EXPECT_EQ(report.survivors[0].tag, "kv_cache");
  EXPECT_EQ(report.survivors[1].tag, "weights");  // setup, before the first `i`
  EXPECT_FALSE(report.survivors[1].recurring);
  EXPECT_EQ(report.survivors[0].count, 10u);
  EXPECT_EQ(report.survivors[0].iterations, 10u);
  EXPECT_EQ(report.survivors[0].judged_iterations, 9u);
  EXPECT_TRUE(report.survivors[0].recurring);
}

TEST(ReplayObservers, LeakCheckNeedsTwoIterationMarkers) {
  const Trace trace = parse_trace("a 1 10\ni\n", "one.trace");
  ReplayObserverOptions observe;
  observe.leak_check = true;
  try {
    ReplayObservers observers(observe, trace);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("one.trace has 1 `i` line, and"), std::string::npos)
        << e.what();
  }
}

TEST(ReplayObservers, RecordWritesASnapshotAndChromeTrace) {
  const Trace trace = read_trace(kLeakyTrace);
  ReplayObserverOptions observe;
  observe.record_path = temp_path("snapshot.json");
  observe.chrome_trace_path = temp_path("trace.json");
  {
    ReplayObservers observers(observe, trace);
    ReplayOptions options = small_device();
    options.hooks = observers.hooks();
    replay_trace(trace, options);
  }
  std::ifstream snapshot_file(observe.record_path);
  const auto snapshot = nlohmann::json::parse(snapshot_file);
  EXPECT_EQ(snapshot.at("format"), "npumem.snapshot");
  std::size_t allocs = 0;
  bool tagged = false;
  for (const auto& entry : snapshot.at("history").at("entries")) {
    if (entry.at("kind") == "alloc") ++allocs;
    tagged = tagged || entry.at("tag") == "kv_cache";
  }
  EXPECT_EQ(allocs, trace.allocations);
  EXPECT_TRUE(tagged);
  std::ifstream chrome_file(observe.chrome_trace_path);
  EXPECT_FALSE(nlohmann::json::parse(chrome_file).at("traceEvents").empty());
  std::filesystem::remove(observe.record_path);
  std::filesystem::remove(observe.chrome_trace_path);
}

// The pages of this process in /dev/shm (npumem.<pid>.<random>).
std::size_t own_pages() {
  const std::string prefix = stats_page_prefix_of_this_process();
  std::size_t pages = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm")) {
    pages += entry.path().filename().string().starts_with(prefix) ? 1 : 0;
  }
  return pages;
}

// As for every process on libnpumem.so: NPUMEM_STATS_PAGE=0 kept Python processes off
// `npumem smi`, and `npumem replay` on it.
TEST(ReplayObservers, StatsPageZeroKeepsTheReplayOffTheStatsPages) {
  const Trace trace = parse_trace("a 1 4096\n", "t.trace");
  const auto pages_during_replay = [&] {
    ReplayObservers observers(ReplayObserverOptions{}, trace);
    ReplayOptions options = small_device();
    options.hooks = observers.hooks();
    std::size_t seen = 0;
    options.hooks.on_finish = [&](Allocator&) { seen = own_pages(); };
    replay_trace(trace, options);
    return seen;
  };
  EXPECT_EQ(pages_during_replay(), 1u);
  ::setenv(kStatsPageVariable, "0", 1);
  EXPECT_EQ(pages_during_replay(), 0u);
  ::unsetenv(kStatsPageVariable);
}

TEST(ReplayObservers, AnUnwritablePathFailsBeforeTheReplay) {
  ReplayObserverOptions observe;
  observe.record_path = "/nonexistent-dir/snapshot.json";
  EXPECT_THROW(ReplayObservers(observe, parse_trace("a 1 1\n", "t.trace")), Error);
}

// The check leaves a file there as it was: a replay that then stopped on bad input (a bad
// --conf, a device spec) had emptied the last run's snapshot.
TEST(ReplayObservers, CheckingTheOutputsChangesNoFile) {
  const auto kept = temp_path("kept.json");
  const auto fresh = temp_path("fresh.json");
  std::ofstream(kept) << "last run";
  ReplayObserverOptions observe;
  observe.record_path = kept.string();
  observe.chrome_trace_path = fresh.string();
  ReplayObservers(observe, parse_trace("a 1 1\n", "t.trace"));
  std::ifstream in(kept);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "last run");
  EXPECT_FALSE(std::filesystem::exists(fresh)) << "a new path is checked, not created";
  std::filesystem::remove(kept);
  // Through a dangling link: the check created the target and removed the link.
  const auto link = temp_path("link.json");
  const auto target = temp_path("target.json");
  std::filesystem::create_symlink(target, link);
  observe.record_path = link.string();
  observe.chrome_trace_path.clear();
  ReplayObservers(observe, parse_trace("a 1 1\n", "t.trace"));
  EXPECT_TRUE(std::filesystem::is_symlink(link));
  EXPECT_FALSE(std::filesystem::exists(target));
  std::filesystem::remove(link);
}

}  // namespace
}  // namespace npumem::cli
