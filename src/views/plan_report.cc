#include "plan_report.h"

#include <cstdio>
#include <limits>
#include <sstream>
#include <string>

#include "npumem/units.h"

namespace npumem::cli {
namespace {

using nlohmann::json;

double ms(double seconds) {
  return seconds * 1000.0;
}

std::string fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

std::string bytes_both(std::uint64_t bytes) {
  return format_bytes(bytes) + " (" + std::to_string(bytes) + " B)";
}

std::string model_title(const std::string& path, const ModelFile& model) {
  std::string title = path + " (";
  if (!model.name.empty()) title += model.name + ", ";
  return title + format_count(model.layers.size(), "layer") + ")";
}

std::string layer_span(const ModelFile& model, std::size_t first, std::size_t end) {
  return std::to_string(first) + ".." + std::to_string(end - 1) + " (" + model.layers[first].name +
         " .. " + model.layers[end - 1].name + ")";
}

json shard_json(const ModelFile& model, const plan::Shard& shard) {
  return json{{"first_layer", shard.first_layer},
              {"last_layer", shard.end_layer - 1},
              {"first_name", model.layers[shard.first_layer].name},
              {"last_name", model.layers[shard.end_layer - 1].name},
              {"weight_bytes", shard.weight_bytes},
              {"activation_bytes", shard.activation_bytes},
              {"peak_bytes", shard.peak_bytes},
              {"prefetches_next", shard.prefetches_next},
              {"load_start_ms", ms(shard.load_start)},
              {"load_ms", ms(shard.load_seconds)},
              {"compute_start_ms", ms(shard.compute_start)},
              {"compute_ms", ms(shard.compute_seconds)},
              {"stall_ms", ms(shard.stall_seconds)}};
}

json timeline_totals_json(const plan::ShardPlan& plan) {
  return json{{"shard_count", plan.shards.size()},
              {"total_ms", ms(plan.total_seconds)},
              {"compute_ms", ms(plan.compute_seconds)},
              {"load_ms", ms(plan.load_seconds)},
              {"stall_ms", ms(plan.stall_seconds)}};
}

std::string totals_text(const plan::ShardPlan& plan) {
  return fixed(ms(plan.total_seconds), 3) + " ms (compute " + fixed(ms(plan.compute_seconds), 3) +
         ", load " + fixed(ms(plan.load_seconds), 3) + ", stall " +
         fixed(ms(plan.stall_seconds), 3) + ")";
}

// Bytes to spare (positive) or missing (negative), exact wherever JSON's integers hold
// them: a shortfall past 2^63 (an arena near 2^64 over a small budget) is a float.
json budget_margin(std::uint64_t budget, std::uint64_t arena) {
  if (arena <= budget) return json(budget - arena);
  const std::uint64_t short_by = arena - budget;
  constexpr std::uint64_t kLowest = std::uint64_t{1} << 63;  // -int64 min
  if (short_by < kLowest) return json(-static_cast<std::int64_t>(short_by));
  if (short_by == kLowest) return json(std::numeric_limits<std::int64_t>::min());
  return json(-static_cast<double>(short_by));
}

json checkpoints_json(const plan::RecomputePlan& plan, std::uint64_t budget) {
  return json{{"peak_bytes", plan.peak_bytes},
              {"recompute_ms", ms(plan.recompute_seconds)},
              {"fits", plan.peak_bytes <= budget}};
}

std::size_t kept_count(const plan::RecomputePlan& plan) {
  std::size_t kept = 0;
  for (const bool keep : plan.keep) kept += keep ? 1 : 0;
  return kept;
}

std::string checkpoints_text(const plan::RecomputePlan& plan, std::uint64_t budget) {
  const double overhead =
      plan.forward_seconds > 0 ? plan.recompute_seconds / plan.forward_seconds : 0;
  return "peak " + format_bytes(plan.peak_bytes) + ", recompute " +
         fixed(ms(plan.recompute_seconds), 3) + " ms (" + fixed(100 * overhead, 1) +
         " % of forward), keeps " + std::to_string(kept_count(plan)) + " of " +
         std::to_string(plan.keep.size()) + " outputs" +
         (plan.peak_bytes <= budget ? "" : "; over budget");
}

}  // namespace

json memory_report_json(const MemoryReport& report) {
  const plan::MemoryPlan& plan = report.plan;
  json result{{"records", report.records_path},
              {"tensors", report.tensors.size()},
              {"alignment", report.alignment},
              {"lower_bound_bytes", plan.lower_bound_bytes},
              {"naive_bytes", plan.naive_bytes},
              {"arena_bytes", plan.arena_bytes},
              {"ratio", plan.ratio()},
              {"algorithm", plan.algorithm},
              {"proven_optimal", plan.proven_optimal},
              {"search_iterations", plan.search_iterations},
              {"plan_ms", report.plan_ms}};
  if (report.budget_bytes) {
    result["budget_bytes"] = *report.budget_bytes;
    result["fits"] = plan.arena_bytes <= *report.budget_bytes;
    result["budget_margin_bytes"] = budget_margin(*report.budget_bytes, plan.arena_bytes);
  }
  for (const OutsideArena& outside : report.outside_arena) {
    result["outside_arena"][outside.kind] = {{"tensors", outside.tensors},
                                             {"bytes", outside.bytes}};
  }
  if (report.with_offsets) result["offsets"] = plan.offsets;
  return result;
}

std::string memory_report_text(const MemoryReport& report) {
  const plan::MemoryPlan& plan = report.plan;
  std::ostringstream out;
  const double of_naive = plan.naive_bytes > 0 ? static_cast<double>(plan.arena_bytes) /
                                                     static_cast<double>(plan.naive_bytes)
                                               : 1.0;
  out << "npumem plan memory: " << report.records_path << "\n"
      << "  tensors      " << report.tensors.size() << " (alignment " << report.alignment << " B)\n"
      << "  lower bound  " << bytes_both(plan.lower_bound_bytes) << "\n"
      << "  naive        " << bytes_both(plan.naive_bytes) << "\n"
      << "  arena        " << bytes_both(plan.arena_bytes) << ": " << fixed(plan.ratio(), 4)
      << " x lower bound, " << fixed(100 * of_naive, 1) << " % of naive\n"
      << "  algorithm    " << plan.algorithm << (plan.proven_optimal ? " (optimal)" : "") << "\n"
      << "  plan time    " << fixed(report.plan_ms, 1) << " ms, " << plan.search_iterations
      << " search iterations\n";
  for (const OutsideArena& outside : report.outside_arena) {
    char label[16];
    std::snprintf(label, sizeof label, "%-12s", outside.kind.c_str());
    out << "  " << label << " " << outside.tensors
        << (outside.tensors == 1 ? " tensor, " : " tensors, ") << bytes_both(outside.bytes) << ": "
        << outside.why << ", outside the arena\n";
  }
  if (report.budget_bytes) {
    const std::uint64_t budget = *report.budget_bytes;
    out << "  budget       " << bytes_both(budget) << ": "
        << (plan.arena_bytes <= budget
                ? "fits, " + format_bytes(budget - plan.arena_bytes) + " to spare"
                : "does not fit, " + format_bytes(plan.arena_bytes - budget) + " short")
        << "\n";
  }
  if (report.with_offsets) {
    out << "  tensor        offset         bytes  first_op   last_op\n";
    for (std::size_t i = 0; i < report.tensors.size(); ++i) {
      const plan::TensorLifetime& tensor = report.tensors[i];
      char line[128];
      std::snprintf(line, sizeof line, "  %6zu %13llu %13llu %9llu %9llu\n", i,
                    static_cast<unsigned long long>(plan.offsets[i]),
                    static_cast<unsigned long long>(tensor.bytes),
                    static_cast<unsigned long long>(tensor.first_op),
                    static_cast<unsigned long long>(tensor.last_op));
      out << line;
    }
  }
  return out.str();
}

json shard_report_json(const ShardReport& report) {
  json shards = json::array();
  for (const plan::Shard& shard : report.plan.shards)
    shards.push_back(shard_json(*report.model, shard));
  json result = timeline_totals_json(report.plan);
  result["model"] = report.model_path;
  result["layers"] = report.model->layers.size();
  result["hbm_budget_bytes"] = report.options.hbm_budget_bytes;
  result["load_bytes_per_s"] = report.options.load_bytes_per_s;
  result["shards"] = std::move(shards);
  result["fewest_shards"] = timeline_totals_json(report.fewest);
  return result;
}

std::string shard_report_text(const ShardReport& report) {
  std::ostringstream out;
  out << "npumem plan shard: " << model_title(report.model_path, *report.model) << "\n"
      << "  HBM budget " << format_bytes(report.options.hbm_budget_bytes) << ", DDR->HBM "
      << format_bandwidth(static_cast<std::uint64_t>(report.options.load_bytes_per_s)) << "\n"
      << "  shard   weights      peak   load ms  compute ms  stall ms  prefetch  layers\n";
  for (std::size_t k = 0; k < report.plan.shards.size(); ++k) {
    const plan::Shard& shard = report.plan.shards[k];
    char line[160];
    std::snprintf(line, sizeof line, "  %5zu %9s %9s %9.3f %11.3f %9.3f  %-8s  ", k,
                  format_bytes(shard.weight_bytes).c_str(), format_bytes(shard.peak_bytes).c_str(),
                  ms(shard.load_seconds), ms(shard.compute_seconds), ms(shard.stall_seconds),
                  shard.prefetches_next ? "yes" : "no");
    out << line << layer_span(*report.model, shard.first_layer, shard.end_layer) << "\n";
  }
  out << "  total " << totals_text(report.plan) << " in " << report.plan.shards.size()
      << " shards\n"
      << "  fewest shards (" << report.fewest.shards.size() << "): " << totals_text(report.fewest)
      << "\n";
  return out.str();
}

json recompute_report_json(const RecomputeReport& report) {
  json kept = json::array();
  for (std::size_t i = 0; i < report.plan.keep.size(); ++i) {
    if (report.plan.keep[i]) kept.push_back(report.model->layers[i].name);
  }
  json result = checkpoints_json(report.plan, report.budget_bytes);
  result["model"] = report.model_path;
  result["layers"] = report.model->layers.size();
  result["activation_budget_bytes"] = report.budget_bytes;
  result["forward_ms"] = ms(report.plan.forward_seconds);
  result["proven_optimal"] = report.plan.proven_optimal;
  result["kept_layers"] = std::move(kept);
  result["keep_all"] = checkpoints_json(report.keep_all, report.budget_bytes);
  result["sqrt_n"] = checkpoints_json(report.sqrt_n, report.budget_bytes);
  return result;
}

std::string recompute_report_text(const RecomputeReport& report) {
  std::ostringstream out;
  out << "npumem plan recompute: " << model_title(report.model_path, *report.model) << "\n"
      << "  activation budget " << format_bytes(report.budget_bytes) << ", forward "
      << fixed(ms(report.plan.forward_seconds), 3) << " ms\n"
      << "  plan      " << checkpoints_text(report.plan, report.budget_bytes)
      << (report.plan.proven_optimal ? " (optimal)" : " (search bounded: may not be optimal)")
      << "\n"
      << "  keep all  " << checkpoints_text(report.keep_all, report.budget_bytes) << "\n"
      << "  sqrt(n)   " << checkpoints_text(report.sqrt_n, report.budget_bytes) << "\n"
      << "  kept:";
  for (std::size_t i = 0; i < report.plan.keep.size(); ++i) {
    if (report.plan.keep[i]) out << " " << report.model->layers[i].name;
  }
  out << "\n";
  return out.str();
}

}  // namespace npumem::cli
