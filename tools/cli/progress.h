// A one-line progress bar on stderr for long runs: drawn only when stderr is a
// terminal and the run has lasted longer than a second, so short runs and pipes
// stay clean.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace npumem::cli {

// "label [#####-----]  50%": the bar is `width` characters wide.
std::string render_progress(const std::string& label, std::size_t done, std::size_t total,
                            std::size_t width);

class ProgressBar {
 public:
  explicit ProgressBar(std::string label);
  ~ProgressBar();  // erases the bar if it was drawn
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  void set_label(std::string label) { label_ = std::move(label); }
  // Cheap to call often: redraws at most every 100 ms.
  void update(std::size_t done, std::size_t total);

 private:
  using Clock = std::chrono::steady_clock;

  std::string label_;
  bool enabled_;
  bool drawn_ = false;
  Clock::time_point start_;
  Clock::time_point last_draw_;
};

}  // namespace npumem::cli
