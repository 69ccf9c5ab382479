#include "bucket_report.h"

#include <cstdio>
#include <sstream>
#include <string>

#include "npumem/units.h"

namespace npumem::cli {
namespace {

std::uint64_t whole_bytes(double bytes) {
  return static_cast<std::uint64_t>(bytes + 0.5);
}

// "3 8", or "3 (key 64) 8 (key 64)" where the trace keys its iterations.
std::string iteration_list(const std::vector<std::size_t>& iterations,
                           const std::map<std::size_t, std::uint64_t>& keys) {
  std::string out;
  for (std::size_t i : iterations) {
    out += (out.empty() ? "" : " ") + std::to_string(i);
    if (const auto key = keys.find(i); key != keys.end()) {
      out += " (key " + std::to_string(key->second) + ")";
    }
  }
  return out;
}

}  // namespace

nlohmann::ordered_json bucket_advice_json(const BucketAdvice& advice) {
  nlohmann::ordered_json out;
  out["trace"] = advice.source;
  out["iterations"] = advice.iterations;
  out["empty_iterations"] = advice.empty_iterations;
  out["set_aside_iterations"] = advice.set_aside;
  out["shapes"] = advice.shapes;
  out["families"] = advice.families;
  out["alignment_bytes"] = advice.alignment;
  out["peak_requested_bytes"] = advice.peak_requested_bytes;
  out["outside_peak_bytes"] = advice.outside_peak_bytes;
  out["before_iterations_peak_bytes"] = advice.before_iterations_peak_bytes;
  if (advice.caching_out_of_memory.empty()) {
    out["caching_peak_reserved_bytes"] = advice.caching_peak_reserved_bytes;
  } else {
    out["caching_peak_reserved_bytes"] = nullptr;
    out["caching_out_of_memory"] = advice.caching_out_of_memory;
  }
  if (advice.expandable_out_of_memory.empty()) {
    out["expandable_peak_reserved_bytes"] = advice.expandable_peak_reserved_bytes;
  } else {
    out["expandable_peak_reserved_bytes"] = nullptr;
    out["expandable_out_of_memory"] = advice.expandable_out_of_memory;
  }
  out["granule_bytes"] = advice.granule_bytes;
  out["max_buckets"] = advice.max_buckets;
  out["tolerance_percent"] = 100.0 * advice.tolerance;  // as --tolerance takes it
  out["recommended_buckets"] = advice.recommended_buckets;
  out["choices"] = nlohmann::ordered_json::array();
  for (std::size_t k = 1; k <= advice.choices.size(); ++k) {
    const auto& choice = advice.choices[k - 1];
    nlohmann::ordered_json item;
    item["buckets"] = k;
    item["possible"] = choice.has_value();
    if (choice) {
      item["arena_bytes"] = choice->arena_bytes;
      item["waste_bytes"] = whole_bytes(choice->waste_bytes);
      item["cost_bytes"] = whole_bytes(choice->cost_bytes());
      item["planned_total_bytes"] = planned_total_bytes(advice, *choice);
      item["planned_granules_bytes"] = planned_granules_bytes(advice, *choice);
      item["padded_request_share"] = choice->padded_request_share;
      item["bucket_list"] = nlohmann::ordered_json::array();
      for (const AdvisedBucket& bucket : choice->bucket_list) {
        nlohmann::ordered_json entry = {{"lower_bound_bytes", bucket.lower_bound_bytes},
                                        {"arena_bytes", bucket.arena_bytes},
                                        {"iterations", bucket.iterations}};
        if (!advice.iteration_keys.empty()) {
          entry["keys"] = nlohmann::ordered_json::array();
          for (std::size_t i : bucket.iterations) {
            const auto key = advice.iteration_keys.find(i);
            entry["keys"].push_back(key == advice.iteration_keys.end()
                                        ? nlohmann::ordered_json(nullptr)
                                        : nlohmann::ordered_json(key->second));
          }
        }
        item["bucket_list"].push_back(std::move(entry));
      }
    }
    out["choices"].push_back(item);
  }
  return out;
}

std::string bucket_advice_text(const BucketAdvice& advice) {
  std::ostringstream out;
  out << "npumem advise buckets " << advice.source << "\n"
      << format_count(advice.iterations, "iteration")
      << (advice.empty_iterations == 0
              ? ""
              : " (" + std::to_string(advice.empty_iterations) +
                    (advice.empty_iterations == 1 ? " allocating nothing of its own, left out)"
                                                  : " allocating nothing of their own, left out)"))
      << ", " << advice.shapes << (advice.shapes == 1 ? " shape in " : " shapes in ")
      << advice.families << (advice.families == 1 ? " family" : " families")
      << " (iterations whose allocations and frees align request by request)"
      << (advice.set_aside.empty()
              ? ""
              : "; set aside, each alone in its order of allocations (the first makes what "
                "lasts, the last ends the run): iteration" +
                    std::string(advice.set_aside.size() == 1 ? " " : "s ") +
                    iteration_list(advice.set_aside, advice.iteration_keys))
      << "; arenas planned with each request rounded up to " << format_bytes(advice.alignment)
      << ", as the planned strategy's blocks are (`plan memory "
      << "--alignment " << advice.alignment << "` plans alike)\n"
      << "peak requested " << format_bytes(advice.peak_requested_bytes)
      << "; outside the iterations (weights, optimizer state) "
      << format_bytes(advice.outside_peak_bytes) << "; before the first iteration "
      << format_bytes(advice.before_iterations_peak_bytes)
      << "; peak reserved of the trace as it is, unpadded: caching "
      << (advice.caching_out_of_memory.empty() ? format_bytes(advice.caching_peak_reserved_bytes)
                                               : "none: its replay " + advice.caching_out_of_memory)
      << ", expandable "
      << (advice.expandable_out_of_memory.empty()
              ? format_bytes(advice.expandable_peak_reserved_bytes)
              : "none: its replay " + advice.expandable_out_of_memory)
      << "\nplanned total: the arena beside what lies outside the iterations; in granules: "
      << "rounded up to the device's " << format_bytes(advice.granule_bytes)
      << ", the least the planned strategy can reserve\n";
  char line[256];
  std::snprintf(line, sizeof line, "%3s %12s %12s %8s %12s %14s %12s\n", "k", "arena", "waste/iter",
                "padded", "arena+waste", "planned total", "in granules");
  out << line;
  for (std::size_t k = 1; k <= advice.choices.size(); ++k) {
    const auto& choice = advice.choices[k - 1];
    if (!choice) {
      std::snprintf(line, sizeof line, "%3zu (fewer buckets than families)\n", k);
      out << line;
      continue;
    }
    std::snprintf(line, sizeof line, "%3zu %12s %12s %7.1f%% %12s %14s %12s%s\n", k,
                  format_bytes(choice->arena_bytes).c_str(),
                  format_bytes(whole_bytes(choice->waste_bytes)).c_str(),
                  100.0 * choice->padded_request_share,
                  format_bytes(whole_bytes(choice->cost_bytes())).c_str(),
                  format_bytes(planned_total_bytes(advice, *choice)).c_str(),
                  format_bytes(planned_granules_bytes(advice, *choice)).c_str(),
                  k == advice.recommended_buckets ? "  <- recommended" : "");
    out << line;
    for (const AdvisedBucket& bucket : choice->bucket_list) {
      out << "      bucket " << format_bytes(bucket.lower_bound_bytes) << " (plan "
          << format_bytes(bucket.arena_bytes) << "): iterations "
          << iteration_list(bucket.iterations, advice.iteration_keys) << "\n";
    }
  }
  if (const std::size_t more = advice.choices.size() + 1; more <= advice.max_buckets) {
    out << "  " << more
        << (more == advice.max_buckets ? "" : "-" + std::to_string(advice.max_buckets))
        << " (more buckets than shapes)\n";
  }
  if (advice.recommended_buckets != 0) {
    std::snprintf(line, sizeof line, "%.3g%%", 100.0 * advice.tolerance);
    out << "recommended: " << advice.recommended_buckets
        << (advice.recommended_buckets == 1 ? " bucket" : " buckets")
        << ", the fewest whose arena + waste is within " << line << " of the least for up to "
        << advice.max_buckets;
    // At the cap with shapes to spare: a continuous length took 8 of 8, and 21 of 1000.
    if (advice.recommended_buckets == advice.max_buckets && advice.shapes > advice.max_buckets) {
      out << "; that is the most asked for, of " << advice.shapes
          << " shapes: a larger --max-buckets may lower the total (planned_max_plans must keep "
             "as many plans)";
    }
    out << "\n";
  }
  return out.str();
}

}  // namespace npumem::cli
