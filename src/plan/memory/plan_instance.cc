#include "plan/memory/plan_instance.h"

#include <algorithm>
#include <bit>
#include <string>

#include "npumem/errors.h"

namespace npumem::plan {
namespace {

void check_alignment(std::uint64_t alignment) {
  if (!std::has_single_bit(alignment)) {
    throw ConfigError("alignment must be a power of two, got " + std::to_string(alignment));
  }
}

// Sorted distinct lifetime endpoints of the tensors with bytes.
std::vector<std::uint64_t> lifetime_endpoints(std::span<const TensorLifetime> tensors) {
  std::vector<std::uint64_t> endpoints;
  for (const TensorLifetime& tensor : tensors) {
    if (tensor.bytes == 0) continue;
    endpoints.push_back(tensor.first_op);
    endpoints.push_back(tensor.last_op);
  }
  std::sort(endpoints.begin(), endpoints.end());
  endpoints.erase(std::unique(endpoints.begin(), endpoints.end()), endpoints.end());
  return endpoints;
}

std::uint32_t renumbered(const std::vector<std::uint64_t>& endpoints, std::uint64_t op) {
  return static_cast<std::uint32_t>(std::lower_bound(endpoints.begin(), endpoints.end(), op) -
                                    endpoints.begin());
}

}  // namespace

std::uint64_t align_up(std::uint64_t bytes, std::uint64_t alignment) {
  check_alignment(alignment);
  const std::uint64_t remainder = bytes & (alignment - 1);
  if (remainder == 0) return bytes;
  if (bytes > kNoFit - (alignment - remainder)) {
    throw Error("tensor of " + std::to_string(bytes) + " bytes aligned to " +
                std::to_string(alignment) + " exceeds 2^64-1 bytes");
  }
  return bytes + (alignment - remainder);
}

PlanInstance make_plan_instance(std::span<const TensorLifetime> tensors, std::uint64_t alignment) {
  check_alignment(alignment);
  const std::vector<std::uint64_t> endpoints = lifetime_endpoints(tensors);
  PlanInstance instance;
  instance.op_count = static_cast<std::uint32_t>(endpoints.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const TensorLifetime& tensor = tensors[i];
    if (tensor.bytes == 0) continue;
    PlanTensor planned;
    try {
      planned.size = align_up(tensor.bytes, alignment);
    } catch (const Error& e) {
      throw TensorSizeError(i, e.what());
    }
    planned.first = renumbered(endpoints, tensor.first_op);
    planned.last = renumbered(endpoints, tensor.last_op);
    // Saturates for a lifetime spanning every op index; only a priority uses it.
    planned.length = add_or_no_fit(tensor.last_op - tensor.first_op, 1);
    instance.tensors.push_back(planned);
    instance.input_index.push_back(i);
  }
  return instance;
}

std::vector<std::uint64_t> live_bytes_per_op(const PlanInstance& instance) {
  // Starts minus ends, accumulated left to right: exact in 64 bits as long as every
  // running total fits, which the check below enforces.
  std::vector<std::uint64_t> starting(instance.op_count, 0);
  std::vector<std::uint64_t> ending(instance.op_count + 1, 0);
  for (const PlanTensor& tensor : instance.tensors) {
    starting[tensor.first] = add_or_no_fit(starting[tensor.first], tensor.size);
    ending[tensor.last + 1] = add_or_no_fit(ending[tensor.last + 1], tensor.size);
  }
  std::vector<std::uint64_t> live(instance.op_count, 0);
  std::uint64_t current = 0;
  for (std::uint32_t op = 0; op < instance.op_count; ++op) {
    current -= ending[op];
    current = add_or_no_fit(current, starting[op]);
    if (current == kNoFit) {
      // Named by the first tensor that starts here: with it the total overflows.
      const auto starts_here = std::find_if(instance.tensors.begin(), instance.tensors.end(),
                                            [op](const PlanTensor& t) { return t.first == op; });
      const auto tensor = static_cast<std::size_t>(starts_here - instance.tensors.begin());
      throw TensorSizeError(instance.input_index[tensor],
                            "the bytes live at op " + std::to_string(op) +
                                " (renumbered) reach 2^64-1 with this tensor: no 64-bit arena "
                                "holds them");
    }
    live[op] = current;
  }
  return live;
}

std::uint64_t total_bytes(const PlanInstance& instance) {
  std::uint64_t total = 0;
  for (const PlanTensor& tensor : instance.tensors) total = add_or_no_fit(total, tensor.size);
  return total;
}

std::vector<std::uint64_t> offsets_in_input_order(const PlanInstance& instance,
                                                  std::span<const std::uint64_t> offsets,
                                                  std::size_t input_count) {
  std::vector<std::uint64_t> result(input_count, 0);
  for (std::size_t i = 0; i < instance.tensors.size(); ++i) {
    result[instance.input_index[i]] = offsets[i];
  }
  return result;
}

}  // namespace npumem::plan
