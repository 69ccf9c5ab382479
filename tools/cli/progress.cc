#include "progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <utility>

namespace npumem::cli {
namespace {

constexpr auto kQuietPeriod = std::chrono::seconds(1);
constexpr auto kRedrawPeriod = std::chrono::milliseconds(100);
constexpr std::size_t kBarWidth = 40;

}  // namespace

std::string render_progress(const std::string& label, std::size_t done, std::size_t total,
                            std::size_t width) {
  const double fraction =
      total == 0 ? 1.0 : static_cast<double>(std::min(done, total)) / static_cast<double>(total);
  const auto filled = static_cast<std::size_t>(fraction * static_cast<double>(width));
  char percent[8];
  std::snprintf(percent, sizeof percent, "%4d%%", static_cast<int>(fraction * 100.0));
  return label + " [" + std::string(filled, '#') + std::string(width - filled, '-') + "]" + percent;
}

ProgressBar::ProgressBar(std::string label)
    : label_(std::move(label)), enabled_(isatty(STDERR_FILENO) == 1), start_(Clock::now()) {}

ProgressBar::~ProgressBar() {
  if (drawn_) std::fputs("\r\033[K", stderr);
}

void ProgressBar::update(std::size_t done, std::size_t total) {
  if (!enabled_) return;
  const auto now = Clock::now();
  if (now - start_ < kQuietPeriod || (drawn_ && now - last_draw_ < kRedrawPeriod)) return;
  std::fprintf(stderr, "\r%s\033[K", render_progress(label_, done, total, kBarWidth).c_str());
  std::fflush(stderr);
  drawn_ = true;
  last_draw_ = now;
}

}  // namespace npumem::cli
