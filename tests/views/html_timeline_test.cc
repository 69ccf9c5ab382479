#include "html_timeline.h"

#include <gtest/gtest.h>

#include <sstream>

#include "npumem/errors.h"
#include "npumem/snapshot.h"
#include "npumem/units.h"

namespace npumem::cli {
namespace {

nlohmann::json snapshot_with_tag(const std::string& tag) {
  Allocator allocator(make_device("sim:hbm=64MiB,ddr=0"));
  auto recorder = record_history(allocator);
  ScopedMemoryTag scoped(tag);
  void* p = allocator.allocate(1 * MiB);
  std::ostringstream out;
  write_snapshot_json(memory_snapshot(allocator, recorder.get()), out);
  allocator.deallocate(p);
  return nlohmann::json::parse(out.str());
}

TEST(HtmlTimeline, IsOneSelfContainedPageWithTheSnapshotInside) {
  const nlohmann::json snapshot = snapshot_with_tag("attention");
  check_snapshot(snapshot);
  const std::string page =
      render_html_timeline(std::vector<nlohmann::json>{snapshot}, "run <1>.json");
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(page.find("<title>npumem: run &lt;1&gt;.json</title>"), std::string::npos);
  EXPECT_NE(page.find("data-rendered=\"pending\""), std::string::npos);
  EXPECT_NE(page.find("<canvas id=\"timeline\""), std::string::npos);
  EXPECT_NE(page.find("<svg id=\"segments\""), std::string::npos);
  EXPECT_NE(page.find("\"attention\""), std::string::npos);
  // Nothing is fetched: no external scripts, styles or images.
  EXPECT_EQ(page.find("src="), std::string::npos);
  EXPECT_EQ(page.find("href="), std::string::npos);
  EXPECT_EQ(page.find("http://"), page.find("http://www.w3.org/2000/svg"));
}

TEST(HtmlTimeline, TagsCannotCloseTheScriptElement) {
  const std::string page = render_html_timeline(
      std::vector<nlohmann::json>{snapshot_with_tag("</script><script>alert(1)")}, "x");
  EXPECT_EQ(page.find("</script><script>alert"), std::string::npos);
  EXPECT_NE(page.find("\\u003c/script>\\u003cscript>alert(1)"), std::string::npos);
}

TEST(HtmlTimeline, RejectsWhatIsNotASnapshot) {
  nlohmann::json snapshot = snapshot_with_tag("");
  EXPECT_THROW(check_snapshot(nlohmann::json::array()), Error);
  EXPECT_THROW(check_snapshot({{"format", "other"}}), Error);
  nlohmann::json future = snapshot;
  future["version"] = 99;
  try {
    check_snapshot(future);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unsupported snapshot version 99"), std::string::npos);
  }
  nlohmann::json broken = snapshot;
  broken["history"].erase("entries");
  try {
    check_snapshot(broken);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("history.'entries' is missing"), std::string::npos)
        << e.what();
  }
}

// What the page draws must be numbers it can draw: a negative size, an entry without
// its fields.
TEST(HtmlTimeline, RejectsSegmentsAndEntriesItCannotDraw) {
  const nlohmann::json snapshot = snapshot_with_tag("");
  const auto problem = [](const nlohmann::json& bad) {
    try {
      check_snapshot(bad);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  ASSERT_FALSE(snapshot["segments"].empty());
  nlohmann::json negative = snapshot;
  negative["segments"][0]["size"] = -5;
  EXPECT_NE(problem(negative).find("segments[0].'size' is missing or not a whole number"),
            std::string::npos)
      << problem(negative);
  // A block past its segment was drawn as "allocated 909 TiB" in a 2 MiB segment.
  nlohmann::json outside = snapshot;
  ASSERT_FALSE(outside["segments"][0]["blocks"].empty());
  outside["segments"][0]["blocks"][0]["size"] = std::uint64_t{1} << 50;
  EXPECT_NE(problem(outside).find("segments[0].blocks[0] lies outside its segment"),
            std::string::npos)
      << problem(outside);
  outside["segments"][0]["blocks"][0]["size"] = ~std::uint64_t{0};  // and wraps past 2^64
  EXPECT_NE(problem(outside).find("lies outside its segment"), std::string::npos)
      << problem(outside);
  nlohmann::json bogus = snapshot;
  ASSERT_FALSE(bogus["history"]["entries"].empty());
  bogus["history"]["entries"][0] = {{"bogus", 1}};
  EXPECT_NE(problem(bogus).find("history.entries[0].'kind' is missing"), std::string::npos)
      << problem(bogus);
  // Fields the page draws from: without them it drew NaN and said data-rendered="ok".
  nlohmann::json untiered = snapshot;
  untiered["history"]["entries"][0].erase("tier_allocated_bytes");
  EXPECT_NE(problem(untiered).find("history.entries[0].'tier_allocated_bytes' is missing"),
            std::string::npos)
      << problem(untiered);
  nlohmann::json pools = snapshot;
  pools["pools"] = {{"a", 1}};  // an object: the page's quota code threw
  EXPECT_NE(problem(pools).find("'pools' is missing or of the wrong type"), std::string::npos)
      << problem(pools);
  nlohmann::json kindless = snapshot;
  kindless["segments"][0].erase("kind");
  EXPECT_NE(problem(kindless).find("segments[0].'kind' is missing"), std::string::npos)
      << problem(kindless);
  // An entry of a kind the page does not know was drawn as nothing.
  nlohmann::json unknown_kind = snapshot;
  unknown_kind["history"]["entries"][0]["kind"] = "zzz\x1b";
  EXPECT_NE(problem(unknown_kind)
                .find("history.entries[0].'kind' is \"zzz\\u001b\", not an event kind (alloc, "
                      "free, segment_alloc"),
            std::string::npos)
      << problem(unknown_kind);
  nlohmann::json statless = snapshot;
  statless["stats"] = nlohmann::json::object();
  EXPECT_NE(problem(statless).find("stats.'allocated_bytes.all.peak' is missing"),
            std::string::npos)
      << problem(statless);
}

}  // namespace
}  // namespace npumem::cli
