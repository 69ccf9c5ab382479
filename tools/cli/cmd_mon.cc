// `npumem mon [--interval S] [--count N]`: a live view of the devices in use, redrawn
// in place on a terminal (tier bars and a sparkline of the last minute), one line
// per refresh otherwise.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <iostream>
#include <memory>
#include <thread>

#include "commands.h"
#include "mon_view.h"

namespace npumem::cli {
namespace {

constexpr double kSparklineSeconds = 60.0;
constexpr const char* kClearScreen = "\x1b[H\x1b[2J";

struct MonOptions {
  double interval_seconds = 1.0;
  std::size_t count = 0;  // refreshes; 0: until interrupted
};

int run_mon(const MonOptions& options) {
  const bool terminal = ::isatty(STDOUT_FILENO) != 0;
  const auto samples = static_cast<std::size_t>(
      std::max(1.0, std::ceil(kSparklineSeconds / options.interval_seconds)));
  UsageHistory history(samples);
  for (std::size_t refresh = 0; options.count == 0 || refresh < options.count; ++refresh) {
    if (refresh != 0) {
      std::this_thread::sleep_for(std::chrono::duration<double>(options.interval_seconds));
    }
    const std::vector<DeviceView> devices = device_views(read_stats_pages());
    history.add(devices);
    if (terminal) {
      std::cout << kClearScreen
                << mon_screen(devices, history, local_time_text(), options.interval_seconds);
    } else {
      std::cout << mon_line(devices, local_time_text());
    }
    std::cout.flush();
  }
  return kExitOk;
}

}  // namespace

void add_mon_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<MonOptions>();
  CLI::App* command = app.add_subcommand("mon", "Watch device memory live (like watch npu-smi)");
  command->add_option("--interval", options->interval_seconds, "seconds between refreshes")
      ->capture_default_str()
      ->check(seconds_check(0.05, 3600.0));
  command->add_option("--count", options->count, "stop after this many refreshes (0: never)")
      ->capture_default_str()
      ->check(whole_number_check());
  command->callback([options, &exit_code] { exit_code = run_mon(*options); });
}

}  // namespace npumem::cli
