// `npumem plan memory|shard|recompute`: offline plans (see docs/PLANNING.md). This file
// reads the inputs and prints; the planners are pure functions in src/plan.
#include <chrono>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "input_file.h"
#include "json_text.h"
#include "npumem/errors.h"
#include "npumem/plan.h"
#include "npumem/units.h"
#include "onnx_lifetimes.h"
#include "plan_requests.h"
#include "trace.h"
#include "trace_lifetimes.h"

namespace npumem::cli {
namespace {

struct MemoryCommandOptions {
  std::string records_path;
  std::string trace_path;
  std::string onnx_path;
  std::vector<std::string> dims;  // --dim NAME=SIZE, for --onnx
  std::optional<std::size_t> iteration;
  std::optional<std::string> budget;
  std::string alignment = "64";
  double time_limit_s = 1.0;
  std::uint64_t iterations = plan::MemoryPlanOptions{}.max_search_iterations;
  std::uint64_t seed = 1;
  bool json = false;
  bool offsets = false;
};

struct LayerCommandOptions {
  std::string model_path;
  std::string budget;
  std::string load_bandwidth = "50GB/s";
  std::string hbm_bandwidth = "1.2TB/s";
  bool json = false;
};

void print(const nlohmann::json& json_report, const std::string& text_report, bool as_json) {
  if (as_json) {
    std::cout << json_text(json_report) << "\n";
  } else {
    std::cout << text_report;
  }
}

struct MemoryInputs {
  std::vector<plan::TensorLifetime> tensors;
  std::string source;
  std::vector<std::size_t> lines;  // each records tensor's line, so errors can name it
  std::vector<OutsideArena> outside_arena;
};

MemoryInputs onnx_memory_inputs(const MemoryCommandOptions& options) {
  OnnxLifetimes lifetimes = onnx_lifetimes(options.onnx_path, options.dims);
  MemoryInputs inputs;
  inputs.tensors = std::move(lifetimes.tensors);
  inputs.source = options.onnx_path;
  inputs.outside_arena = {
      {"weights", lifetimes.weight_tensors, lifetimes.weight_bytes, "lasting"},
      {"inputs", lifetimes.input_tensors, lifetimes.input_bytes, "the caller's buffers"}};
  return inputs;
}

MemoryInputs memory_inputs(const MemoryCommandOptions& options) {
  const int given = static_cast<int>(!options.records_path.empty()) +
                    static_cast<int>(!options.trace_path.empty()) +
                    static_cast<int>(!options.onnx_path.empty());
  if (given != 1) {
    throw ConfigError("plan memory: give one of a records file, --trace TRACE or --onnx MODEL");
  }
  if (options.iteration && options.trace_path.empty()) {
    throw ConfigError("plan memory: --iteration needs --trace");
  }
  if (!options.dims.empty() && options.onnx_path.empty()) {
    throw ConfigError("plan memory: --dim needs --onnx");
  }
  if (!options.onnx_path.empty()) {
    MemoryInputs inputs = onnx_memory_inputs(options);
    plan::check_bytes_sum(inputs.tensors, inputs.source);
    return inputs;
  }
  MemoryInputs inputs;
  if (!options.records_path.empty()) {
    inputs.source = options.records_path;
    inputs.tensors = plan::parse_lifetime_records(read_input_file(options.records_path, "records"),
                                                  options.records_path, &inputs.lines);
    check_some_tensor(inputs.tensors, options.records_path);
    return inputs;
  }
  inputs.source = options.trace_path;
  if (options.iteration) inputs.source += " iteration " + std::to_string(*options.iteration);
  inputs.tensors = trace_lifetimes(read_trace(options.trace_path), options.iteration).tensors;
  plan::check_bytes_sum(inputs.tensors, inputs.source);
  return inputs;
}

int run_memory(const MemoryCommandOptions& options) {
  const std::optional<std::uint64_t> budget =
      options.budget ? std::optional(parse_size(*options.budget)) : std::nullopt;
  MemoryInputs inputs;
  try {
    inputs = memory_inputs(options);
  } catch (const OnnxToolError& e) {
    std::cerr << "npumem: plan memory --onnx: " << e.what() << "\n";
    return kExitFailure;
  }
  plan::MemoryPlanOptions plan_options;
  plan_options.alignment = parse_size(options.alignment);
  plan_options.time_limit = plan::time_limit_from_seconds(options.time_limit_s);
  plan_options.max_search_iterations = options.iterations;
  plan_options.seed = options.seed;
  std::unique_ptr<MemoryPlanRun> run;
  try {
    run = run_memory_plan(std::move(inputs.tensors), inputs.source, plan_options, options.offsets);
  } catch (const plan::TensorSizeError& e) {
    if (inputs.lines.empty()) throw ConfigError(inputs.source + ": " + e.what());
    throw ParseError(options.records_path, inputs.lines.at(e.tensor()), e.what());
  }
  MemoryReport& report = run->report;
  report.budget_bytes = budget;
  report.outside_arena = std::move(inputs.outside_arena);
  print(memory_report_json(report), memory_report_text(report), options.json);
  if (budget && report.plan.arena_bytes > *budget) {
    // With exact bytes: rounded, both figures may read alike ("120 MiB over 120 MiB").
    std::cerr << "npumem: the plan needs " << format_bytes(report.plan.arena_bytes) << " ("
              << report.plan.arena_bytes << " B), over the budget of " << format_bytes(*budget)
              << " (" << *budget << " B) by " << format_bytes(report.plan.arena_bytes - *budget)
              << "\n";
    return kExitBadInput;
  }
  return kExitOk;
}

LayerPlanRequest layer_request(const LayerCommandOptions& options) {
  LayerPlanRequest request;
  request.budget_bytes = parse_size(options.budget);
  request.load_bytes_per_s = static_cast<double>(parse_bandwidth(options.load_bandwidth));
  request.hbm_bytes_per_s = static_cast<double>(parse_bandwidth(options.hbm_bandwidth));
  return request;
}

// Runs a layer plan; with --json, one that cannot fit still answers on stdout (fits
// false, the bytes the leanest plan needs, the error) before the error goes to stderr.
template <typename Plan>
int run_layer_plan(const LayerCommandOptions& options, const char* budget_key, Plan plan) {
  try {
    plan();
    return kExitOk;
  } catch (const OutOfMemory& e) {
    if (options.json) {
      const nlohmann::json answer = {{"model", options.model_path},
                                     {"fits", false},
                                     {budget_key, parse_size(options.budget)},
                                     {"needed_bytes", e.requested_bytes()},
                                     {"error", e.what()}};
      std::cout << json_text(answer) << "\n";
    }
    throw;
  }
}

int run_shard(const LayerCommandOptions& options) {
  return run_layer_plan(options, "hbm_budget_bytes", [&] {
    const auto run = run_shard_plan(read_input_file(options.model_path, "model file"),
                                    options.model_path, layer_request(options));
    print(shard_report_json(run->report), shard_report_text(run->report), options.json);
  });
}

int run_recompute(const LayerCommandOptions& options) {
  return run_layer_plan(options, "activation_budget_bytes", [&] {
    const auto run = run_recompute_plan(read_input_file(options.model_path, "model file"),
                                        options.model_path, layer_request(options));
    print(recompute_report_json(run->report), recompute_report_text(run->report), options.json);
  });
}

void add_memory_command(CLI::App& plan_command, int& exit_code) {
  auto options = std::make_shared<MemoryCommandOptions>();
  CLI::App* command = plan_command.add_subcommand(
      "memory",
      "Static memory plan: an offset per tensor from lifetime records, a trace or an ONNX model");
  command
      ->add_option("records", options->records_path, "records file: <bytes> <first_op> <last_op>")
      ->check(CLI::ExistingFile);
  command->add_option("--trace", options->trace_path, "plan the lifetimes of an allocation trace")
      ->check(CLI::ExistingFile);
  command
      ->add_option("--onnx", options->onnx_path,
                   "plan the tensors of an ONNX model (runs npumem.onnx_lifetimes; python3-onnx)")
      ->check(CLI::ExistingFile);
  command->add_option("--dim", options->dims,
                      "with --onnx: a symbolic input dimension's size, NAME=SIZE or "
                      "INPUT:AXIS=SIZE (repeatable)");
  command
      ->add_option("--iteration", options->iteration,
                   "with --trace: only the tensors made in this iteration (0: after the first i)")
      ->check(whole_number_check());
  command
      ->add_option("--budget", options->budget,
                   "arena budget, e.g. 1GiB: says whether the plan fits (exit 2 when not)")
      ->check(size_check());
  command->add_option("--alignment", options->alignment, "offset and size alignment (power of two)")
      ->capture_default_str()
      ->check(power_of_two_size_check());
  command->add_option("--time-limit", options->time_limit_s, "seconds the search may take")
      ->capture_default_str()
      ->check(nonnegative_check());
  command
      ->add_option("--iterations", options->iterations,
                   "most randomised search iterations (with --seed: reproducible plans)")
      ->check(whole_number_check());
  command->add_option("--seed", options->seed, "seed of the randomised search")
      ->capture_default_str()
      ->check(whole_number_check());
  command->add_flag("--json", options->json, "print one JSON object");
  command->add_flag("--offsets", options->offsets, "also print each tensor's offset");
  command->callback([options, &exit_code] { exit_code = run_memory(*options); });
}

void add_layer_options(CLI::App* command, LayerCommandOptions& options) {
  command
      ->add_option("model", options.model_path,
                   "model JSON (npumem-extract-model writes it: tools/scripts/extract_model.py)")
      ->required()
      ->check(CLI::ExistingFile);
  command
      ->add_option("--hbm-bandwidth", options.hbm_bandwidth,
                   "estimates the time of layers without compute_ms (memory-bound)")
      ->capture_default_str()
      ->check(bandwidth_check());
  command->add_flag("--json", options.json, "print one JSON object");
}

void add_shard_command(CLI::App& plan_command, int& exit_code) {
  auto options = std::make_shared<LayerCommandOptions>();
  CLI::App* command = plan_command.add_subcommand(
      "shard", "Shard plan: consecutive layer groups double-buffered from DDR into HBM");
  add_layer_options(command, *options);
  command->add_option("--hbm", options->budget, "HBM budget for weights and activations")
      ->required()
      ->check(size_check());
  command->add_option("--bandwidth", options->load_bandwidth, "DDR to HBM bandwidth")
      ->capture_default_str()
      ->check(bandwidth_check());
  command->callback([options, &exit_code] { exit_code = run_shard(*options); });
}

void add_recompute_command(CLI::App& plan_command, int& exit_code) {
  auto options = std::make_shared<LayerCommandOptions>();
  CLI::App* command = plan_command.add_subcommand(
      "recompute", "Recompute plan: which activations training keeps under a memory budget");
  add_layer_options(command, *options);
  command->add_option("--budget", options->budget, "activation memory budget")
      ->required()
      ->check(size_check());
  command->callback([options, &exit_code] { exit_code = run_recompute(*options); });
}

}  // namespace

void add_plan_command(CLI::App& app, int& exit_code) {
  CLI::App* command = app.add_subcommand("plan", "Offline plans: static memory, shards, recompute");
  command->require_subcommand(1);
  add_memory_command(*command, exit_code);
  add_shard_command(*command, exit_code);
  add_recompute_command(*command, exit_code);
}

}  // namespace npumem::cli
