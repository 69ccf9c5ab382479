// Static memory plans on every shared lifetime record file, every shared trace (all its
// allocations, as `npumem plan memory --trace` plans them) and dense random sets: prints
// per instance the tensors, lower bound, naive size, npumem's arena, its ratio to the
// lower bound, the plan time and search iterations it ran, and beside them the published
// greedy planners' ratios (TFLite's greedy by size with best fit, TFLite Micro's greedy
// first fit; "-" above kGreedyMaxTensors, where their quadratic time runs to minutes).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "npumem/plan.h"
#include "plan/memory/order_placement.h"
#include "plan/memory/plan_instance.h"
#include "plan/memory/random_lifetimes.h"
#include "trace.h"
#include "trace_lifetimes.h"

namespace npumem::bench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kGreedyMaxTensors = 20'000;

struct BenchOptions {
  std::string records_dir = NPUMEM_SHARED_DIR "/records";
  std::string traces_dir = NPUMEM_SHARED_DIR "/traces";
  double time_limit_s = 1.0;
  std::uint64_t random_seeds = 5;
  std::vector<std::uint64_t> large_tensors = {10'000, 100'000};
};

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string greedy_ratio(std::span<const plan::TensorLifetime> tensors, plan::GapRule rule,
                         std::uint64_t lower_bound) {
  if (tensors.size() > kGreedyMaxTensors) return "-";
  const plan::PlanInstance instance = plan::make_plan_instance(tensors, 64);
  std::vector<std::uint64_t> offsets;
  const std::uint64_t arena =
      plan::place_in_order(instance, plan::order_by_size(instance), rule, offsets);
  const double ratio =
      lower_bound == 0 ? 1.0 : static_cast<double>(arena) / static_cast<double>(lower_bound);
  char text[32];
  std::snprintf(text, sizeof text, "%.4f", ratio);
  return text;
}

void print_header() {
  std::printf("%-28s %8s %14s %14s %14s %8s %9s %7s %9s %9s  %s\n", "instance", "tensors",
              "lower_bound_B", "naive_B", "arena_B", "ratio", "plan_ms", "iters", "tflite",
              "tfl_micro", "algorithm");
}

void print_row(const std::string& name, std::span<const plan::TensorLifetime> tensors,
               double time_limit_s) {
  plan::MemoryPlanOptions options;
  options.time_limit = plan::time_limit_from_seconds(time_limit_s);
  const Clock::time_point start = Clock::now();
  const plan::MemoryPlan memory_plan = plan::plan_memory(tensors, options);
  const double plan_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  const std::uint64_t bound = memory_plan.lower_bound_bytes;
  std::printf("%-28s %8zu %14llu %14llu %14llu %8.4f %9.1f %7llu %9s %9s  %s\n", name.c_str(),
              tensors.size(), static_cast<unsigned long long>(bound),
              static_cast<unsigned long long>(memory_plan.naive_bytes),
              static_cast<unsigned long long>(memory_plan.arena_bytes), memory_plan.ratio(),
              plan_ms, static_cast<unsigned long long>(memory_plan.search_iterations),
              greedy_ratio(tensors, plan::GapRule::best_fit, bound).c_str(),
              greedy_ratio(tensors, plan::GapRule::first_fit, bound).c_str(),
              memory_plan.algorithm.c_str());
}

// The files of a directory with this extension, sorted; none (with a note) when it does
// not exist.
std::vector<std::filesystem::path> files_with_extension(const std::string& directory,
                                                        const std::string& extension) {
  std::vector<std::filesystem::path> files;
  if (!std::filesystem::is_directory(directory)) {
    std::fprintf(stderr, "plan_bench: no directory %s; skipping its %s files\n", directory.c_str(),
                 extension.c_str());
    return files;
  }
  for (const auto& entry : std::filesystem::directory_iterator(directory)) {
    if (entry.path().extension() == extension) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

void run(const BenchOptions& options) {
  print_header();
  for (const std::filesystem::path& file : files_with_extension(options.records_dir, ".records")) {
    const std::vector<plan::TensorLifetime> tensors =
        plan::parse_lifetime_records(read_file(file), file.string());
    print_row(file.stem().string(), tensors, options.time_limit_s);
  }
  for (const std::filesystem::path& file : files_with_extension(options.traces_dir, ".trace")) {
    const cli::TraceLifetimes lifetimes = cli::trace_lifetimes(cli::read_trace(file.string()), {});
    print_row("trace:" + file.stem().string(), lifetimes.tensors, options.time_limit_s);
  }
  for (std::uint64_t seed = 1; seed <= options.random_seeds; ++seed) {
    plan::RandomLifetimeSpec spec;
    spec.seed = seed;
    print_row("dense_2000x400_seed" + std::to_string(seed), plan::random_lifetimes(spec),
              options.time_limit_s);
  }
  for (const std::uint64_t tensors : options.large_tensors) {
    for (const std::uint64_t ops : {400u, 2000u}) {
      plan::RandomLifetimeSpec spec;
      spec.tensors = tensors;
      spec.ops = ops;
      print_row("dense_" + std::to_string(spec.tensors) + "x" + std::to_string(ops),
                plan::random_lifetimes(spec), options.time_limit_s);
    }
  }
}

}  // namespace
}  // namespace npumem::bench

int main(int argc, char** argv) {
  npumem::bench::BenchOptions options;
  CLI::App app{"Static memory plans: npumem against the lower bound and published greedy planners"};
  app.add_option("--records", options.records_dir, "directory of .records files")
      ->capture_default_str();
  app.add_option("--time-limit", options.time_limit_s, "seconds per plan")->capture_default_str();
  app.add_option("--random-seeds", options.random_seeds, "dense random sets of 2,000 tensors")
      ->capture_default_str();
  app.add_option("--traces", options.traces_dir, "directory of .trace files")
      ->capture_default_str();
  app.add_option("--large-tensors", options.large_tensors,
                 "tensors in each size of large random sets (x 400 and x 2000 ops)")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  npumem::bench::run(options);
  return 0;
}
