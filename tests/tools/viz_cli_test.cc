// `npumem replay --record` then `npumem viz`, and the page drawn by headless Chromium.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

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
std::string rendered_dom(const std::filesystem::path& page, const std::filesystem::path& dir) {
  const auto profile = dir / "chromium-profile";
  const auto dom = dir / "dom.html";
  const std::string command =
      std::string("timeout 120 ") + kChromium +
      " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run"
      " --disable-background-networking --disable-component-update --disable-sync"
      " --user-data-dir=" +
      profile.string() + " --dump-dom file://" + page.string() + " >" + dom.string() +
      " 2>/dev/null";
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  return read_file(dom);
}

TEST(VizCliTest, RecordedReplayBecomesATimelineThatChromiumDraws) {
  const auto dir = scratch();
  const auto snapshot = dir / "snapshot.json";
  const auto page = dir / "timeline.html";
  const std::string trace = std::string(NPUMEM_SHARED_DIR) + "/traces/vit_b_16_infer.trace";
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
  const std::string dom = rendered_dom(page, dir);
  EXPECT_NE(dom.find("data-rendered=\"ok\""), std::string::npos) << dom.substr(0, 2000);
  EXPECT_EQ(dom.find("data-error"), std::string::npos);
  const std::string marker = "data-plotted=\"";
  const std::size_t plotted = dom.find(marker);
  ASSERT_NE(plotted, std::string::npos);
  EXPECT_GT(std::stoul(dom.substr(plotted + marker.size())), 100u);
  // The largest-blocks table has rows beyond its header.
  EXPECT_NE(dom.find("allocated at event"), std::string::npos);
  EXPECT_NE(dom.find(" MiB</td>"), std::string::npos);
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
  EXPECT_NE(broken.err.find("malformed JSON"), std::string::npos) << broken.err;
  const auto foreign = run_npumem("viz " + other.string() + " -o " + page);
  EXPECT_EQ(foreign.exit_code, 2);
  EXPECT_NE(foreign.err.find("not an npumem snapshot"), std::string::npos) << foreign.err;
  EXPECT_EQ(run_npumem("viz " + (dir / "missing.json").string() + " -o " + page).exit_code, 2);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace npumem::cli
