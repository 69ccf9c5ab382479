// The clock a placement search reads its deadline from. The machine's (plan_memory's
// time limit by default), or a clock of the work done, which the search's steps
// advance by what they did, each step priced at what it takes on a reference machine
// (this project's 2-core x86 build machine): its plans then depend on the inputs alone,
// not on how loaded the machine is. The planned strategy's planner reads the latter:
// with the machine's clock, one trace replayed at 1.062x or 1.181x its peak requested
// depending on what else ran.
#pragma once

#include <chrono>
#include <cstdint>

namespace npumem::plan {

class SearchClock {
 public:
  using time_point = std::chrono::steady_clock::time_point;
  using duration = std::chrono::steady_clock::duration;
  using rep = duration::rep;

  // counts_work: the clock of work done, starting at the clock's epoch.
  explicit SearchClock(bool counts_work) : counts_work_(counts_work) {}

  time_point now() const {
    if (!counts_work_) return std::chrono::steady_clock::now();
    return time_point(std::chrono::duration_cast<duration>(
        std::chrono::duration<std::uint64_t, std::pico>(picoseconds_)));
  }

  // Work done; ignored by the machine's clock. A skyline step places a tensor or raises
  // a stretch; a gap scan step sees one placed tensor while placing another in order.
  void skyline_steps(std::uint64_t steps) { add(steps * kSkylineStepPicoseconds); }
  void gap_scan_steps(std::uint64_t steps) { add(steps * kGapScanStepPicoseconds); }
  void exact_nodes(std::uint64_t nodes) { add(nodes * kExactNodePicoseconds); }

 private:
  // Prices measured on the build machine: a skyline step took 160-220 ns on the
  // iterations of captured models (1,700-3,900 tensors; 65 ns on 200) and 240-320 ns on
  // dense random sets; a gap scan step 3.4-4.6 ns on the models, 6-8 ns on the dense
  // sets. The prices are the models': the planned strategy plans their iterations.
  static constexpr std::uint64_t kSkylineStepPicoseconds = 200'000;
  static constexpr std::uint64_t kGapScanStepPicoseconds = 4'000;
  static constexpr std::uint64_t kExactNodePicoseconds = 100'000;

  void add(std::uint64_t picoseconds) {
    if (counts_work_) picoseconds_ += picoseconds;
  }

  bool counts_work_;
  std::uint64_t picoseconds_ = 0;
};

}  // namespace npumem::plan
