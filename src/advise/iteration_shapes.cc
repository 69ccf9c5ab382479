#include "iteration_shapes.h"

#include <algorithm>
#include <map>
#include <optional>

#include "npumem/errors.h"

namespace npumem::cli {
namespace {

constexpr std::int64_t kNever = -2;  // free iteration of a tensor never freed
constexpr std::uint32_t kAllocEvent = ~std::uint32_t{0};

// One iteration's working set: its events (kAllocEvent, or the index of the request
// freed), its request sizes and the tensors it carries in.
struct WorkingSet {
  std::vector<std::uint32_t> events;
  std::vector<std::uint64_t> sizes;
  std::vector<plan::TensorLifetime> carried;
};

std::vector<plan::TensorLifetime> lifetimes_of(const std::vector<std::uint32_t>& events) {
  std::vector<plan::TensorLifetime> lifetimes;
  const std::uint64_t last_op = events.empty() ? 0 : events.size() - 1;
  for (std::uint64_t op = 0; op < events.size(); ++op) {
    if (events[op] == kAllocEvent) {
      lifetimes.push_back({0, op, last_op});
    } else {
      lifetimes[events[op]].last_op = op;
    }
  }
  return lifetimes;
}

// The first iteration (it makes the optimizer state among its tensors) and the last (a
// script's end frees in another order) often allocate in an order of their own: as
// families of one iteration, a keyed loop of 3 lengths got 5 buckets, 2 of them for one
// iteration each. Such an edge iteration is set aside when a family of several
// iterations remains: the loop's own order.
void set_aside_edges(IterationShapes& shapes) {
  const bool loop_found =
      std::any_of(shapes.families.begin(), shapes.families.end(), [](const ShapeFamily& family) {
        std::size_t members = 0;
        for (const IterationShape& shape : family.shapes) members += shape.iterations.size();
        return members >= 2;
      });
  if (!loop_found) return;
  const auto alone = [&](std::size_t iteration) {
    for (std::size_t f = 0; f < shapes.families.size(); ++f) {
      const std::vector<IterationShape>& members = shapes.families[f].shapes;
      if (members.size() == 1 && members[0].iterations == std::vector<std::size_t>{iteration}) {
        return std::optional<std::size_t>(f);
      }
    }
    return std::optional<std::size_t>();
  };
  for (const std::size_t edge : {shapes.iterations - 1, std::size_t{0}}) {
    const std::optional<std::size_t> family = alone(edge);
    if (!family) continue;
    if (!shapes.set_aside.empty() && shapes.set_aside.front() == edge) continue;  // 1 iteration
    shapes.families.erase(shapes.families.begin() + static_cast<std::ptrdiff_t>(*family));
    shapes.set_aside.insert(shapes.set_aside.begin(), edge);
  }
}

}  // namespace

std::vector<plan::TensorLifetime> with_sizes(const ShapeFamily& family,
                                             const std::vector<std::uint64_t>& sizes,
                                             const std::vector<plan::TensorLifetime>& carried) {
  std::vector<plan::TensorLifetime> tensors = family.lifetimes;
  for (std::size_t i = 0; i < tensors.size(); ++i) tensors[i].bytes = sizes[i];
  tensors.insert(tensors.end(), carried.begin(), carried.end());
  return tensors;
}

void merge_carried(std::vector<plan::TensorLifetime>& into,
                   const std::vector<plan::TensorLifetime>& from) {
  std::vector<plan::TensorLifetime> merged;
  std::size_t i = 0;
  std::size_t j = 0;
  while (i < into.size() || j < from.size()) {
    if (j == from.size() || (i < into.size() && into[i].last_op < from[j].last_op)) {
      merged.push_back(into[i++]);
    } else if (i == into.size() || from[j].last_op < into[i].last_op) {
      merged.push_back(from[j++]);
    } else {
      merged.push_back(into[i++]);
      merged.back().bytes = std::max(merged.back().bytes, from[j++].bytes);
    }
  }
  into = std::move(merged);
}

IterationShapes iteration_shapes(const Trace& trace) {
  if (trace.iterations == 0) {
    throw ParseError(trace.source, std::max<std::size_t>(trace.lines, 1),
                     "no `i` lines: iteration boundaries are needed to tell iterations apart "
                     "(call npumem.torch.iteration() once per iteration during the capture, "
                     "npumem_iteration() in C; an optimizer step marks one by itself)");
  }
  const auto last_iteration = static_cast<std::int64_t>(trace.iterations) - 1;
  // By slot: the iteration that made it (-1: before the first i) and freed it.
  std::vector<std::int64_t> made_in(trace.allocations, -1);
  std::vector<std::int64_t> freed_in(trace.allocations, kNever);
  std::vector<bool> in_default_pool(trace.allocations, false);
  std::int64_t iteration = -1;
  bool default_pool = true;
  for (const TraceEvent& event : trace.events) {
    if (event.op == TraceOp::iteration) ++iteration;
    if (event.op == TraceOp::pool) default_pool = trace.pools[event.index] == kDefaultPoolName;
    if (event.op == TraceOp::alloc) {
      made_in[event.index] = iteration;
      in_default_pool[event.index] = default_pool;
    }
    if (event.op == TraceOp::free) freed_in[event.index] = iteration;
  }
  const auto in_working_set = [&](std::uint32_t slot) {
    const std::int64_t made = made_in[slot];
    const std::int64_t freed = freed_in[slot];
    return made >= 0 && in_default_pool[slot] &&
           (freed == kNever ? made == last_iteration : freed <= made + 1);
  };

  std::vector<WorkingSet> sets(trace.iterations);
  std::vector<std::uint32_t> request_of(trace.allocations, 0);  // by slot, in its set
  IterationShapes out;
  out.iterations = trace.iterations;
  std::uint64_t outside = 0;
  iteration = -1;
  for (const TraceEvent& event : trace.events) {
    if (event.op == TraceOp::iteration) {
      ++iteration;
      out.outside_peak_bytes = std::max(out.outside_peak_bytes, outside);  // what lasts
    }
    if (event.op != TraceOp::alloc && event.op != TraceOp::free) continue;
    if (!in_working_set(event.index)) {
      if (event.op == TraceOp::alloc) {
        outside += event.bytes;
        std::uint64_t& peak =
            iteration < 0 ? out.before_iterations_peak_bytes : out.outside_peak_bytes;
        peak = std::max(peak, outside);
      } else {
        outside -= event.bytes;
      }
      continue;
    }
    WorkingSet& set = sets[static_cast<std::size_t>(iteration)];
    // A tensor of the previous iteration freed in this one is not one of its events:
    // it is live until then (and needs no room when freed before any event).
    if (made_in[event.index] != iteration) {
      if (!set.events.empty()) set.carried.push_back({event.bytes, 0, set.events.size() - 1});
      continue;
    }
    if (event.op == TraceOp::alloc) {
      request_of[event.index] = static_cast<std::uint32_t>(set.sizes.size());
      set.sizes.push_back(event.bytes);
      set.events.push_back(kAllocEvent);
    } else {
      set.events.push_back(request_of[event.index]);
    }
  }

  std::map<std::vector<std::uint32_t>, std::size_t> family_of;
  std::vector<std::map<std::vector<std::uint64_t>, std::size_t>> shape_of;
  for (std::size_t i = 0; i < sets.size(); ++i) {
    if (sets[i].sizes.empty()) {
      ++out.empty_iterations;
      continue;
    }
    const auto [family_it, new_family] = family_of.try_emplace(sets[i].events, out.families.size());
    if (new_family) {
      out.families.push_back({lifetimes_of(sets[i].events), {}});
      shape_of.emplace_back();
    }
    ShapeFamily& family = out.families[family_it->second];
    auto& shapes = shape_of[family_it->second];
    const auto [shape_it, new_shape] = shapes.try_emplace(sets[i].sizes, family.shapes.size());
    if (new_shape) {
      IterationShape shape;
      shape.sizes = sets[i].sizes;
      for (std::uint64_t bytes : shape.sizes) shape.requested_bytes += bytes;
      family.shapes.push_back(std::move(shape));
    }
    IterationShape& shape = family.shapes[shape_it->second];
    shape.iterations.push_back(i);
    merge_carried(shape.carried, sets[i].carried);
  }
  set_aside_edges(out);
  return out;
}

}  // namespace npumem::cli
