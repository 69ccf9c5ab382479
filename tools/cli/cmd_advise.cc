// `npumem advise buckets TRACE`: bucket sizes for a workload whose iterations vary in
// size (see docs/PLANNING.md, "Buckets for dynamic shapes").
#include <iostream>
#include <string>

#include "bucket_advisor.h"
#include "bucket_report.h"
#include "commands.h"
#include "json_text.h"
#include "trace.h"

namespace npumem::cli {
namespace {

void add_buckets_command(CLI::App& advise_command, int& exit_code) {
  struct Options {
    std::string trace_path;
    std::string device_spec = "sim";
    std::size_t max_buckets = BucketAdviceOptions{}.max_buckets;
    double tolerance_percent = 100.0 * BucketAdviceOptions{}.tolerance;
    bool json = false;
  };
  auto options = std::make_shared<Options>();
  CLI::App* command = advise_command.add_subcommand(
      "buckets", "Buckets for variable-size iterations: planned arena plus padding waste per k");
  command->add_option("trace", options->trace_path, "trace file with `i` lines")
      ->required()
      ->check(CLI::ExistingFile);
  command->add_option("--max-buckets", options->max_buckets, "the most buckets to consider")
      ->capture_default_str()
      ->check(whole_number_check())
      ->check(positive_check());
  command
      ->add_option("--tolerance", options->tolerance_percent,
                   "recommend the fewest buckets within this percentage of the least cost")
      ->capture_default_str()
      ->check(nonnegative_check());
  command
      ->add_option("--device", options->device_spec,
                   "device of the caching strategy's replay (sim spec)")
      ->capture_default_str();
  command->add_flag("--json", options->json, "print one JSON object");
  command->callback([options, &exit_code] {
    BucketAdviceOptions advise;
    advise.max_buckets = options->max_buckets;
    // + 0.0: -0 reads as 0 ("within -0%").
    advise.tolerance = options->tolerance_percent / 100.0 + 0.0;
    advise.replay.device_spec = options->device_spec;
    const BucketAdvice advice = advise_buckets(read_trace(options->trace_path), advise);
    if (options->json) {
      std::cout << json_text(bucket_advice_json(advice)) << "\n";
    } else {
      std::cout << bucket_advice_text(advice);
    }
    exit_code = kExitOk;
  });
}

}  // namespace

void add_advise_command(CLI::App& app, int& exit_code) {
  CLI::App* command = app.add_subcommand("advise", "Advice from a measured trace: buckets");
  command->require_subcommand(1);
  add_buckets_command(*command, exit_code);
}

}  // namespace npumem::cli
