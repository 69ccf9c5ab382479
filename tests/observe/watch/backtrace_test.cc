#include "observe/watch/backtrace.h"

#include <gtest/gtest.h>

#include <array>

namespace npumem::observe {
namespace {

[[gnu::noinline]] std::size_t capture_here(std::array<const void*, 8>& frames, std::size_t skip) {
  const std::size_t count = capture_backtrace(frames.data(), frames.size(), skip);
  asm volatile("");  // code after the call: no tail call, so this frame stays on the stack
  return count;
}

TEST(Backtrace, CapturesTheCallersStackUpToTheLimit) {
  std::array<const void*, 8> frames{};
  const std::size_t count = capture_here(frames, 0);
  ASSERT_GT(count, 1u);
  ASSERT_LE(count, frames.size());
  for (std::size_t i = 0; i < count; ++i) EXPECT_NE(frames[i], nullptr);
  // The innermost frame is inside capture_here.
  const auto here = reinterpret_cast<std::uintptr_t>(&capture_here);
  const auto first = reinterpret_cast<std::uintptr_t>(frames[0]);
  EXPECT_GT(first, here);
  EXPECT_LT(first, here + 4096);
}

TEST(Backtrace, SkipDropsInnerFrames) {
  std::array<const void*, 8> all{};
  std::array<const void*, 8> skipped{};
  ASSERT_GE(capture_here(all, 0), 3u);
  ASSERT_GE(capture_here(skipped, 1), 2u);
  // Without skipping, the first frame is in capture_here; skipping it starts in this
  // test body, whose caller is then the second frame, as it is the third without.
  EXPECT_NE(skipped[0], all[0]);
  EXPECT_EQ(skipped[1], all[2]);
}

TEST(Backtrace, DescribesFramesByModuleAndOffset) {
  std::array<const void*, 8> frames{};
  capture_here(frames, 0);
  const std::string name = describe_frame(frames[0]);
  EXPECT_NE(name.find("backtrace_test"), std::string::npos) << name;
  EXPECT_NE(name.find("+0x"), std::string::npos) << name;
  FrameNames names;
  EXPECT_EQ(&names(frames[0]), &names(frames[0]));  // remembered, not redone
  EXPECT_EQ(names(frames[0]), name);
}

}  // namespace
}  // namespace npumem::observe
