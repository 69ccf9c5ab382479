// Forward time per layer: given, or estimated as memory-bound at HBM bandwidth.
#include <cmath>
#include <string>

#include "npumem/errors.h"
#include "npumem/plan.h"

namespace npumem::plan {

std::vector<double> layer_compute_seconds(std::span<const Layer> layers,
                                          const LayerTiming& timing) {
  if (!(timing.hbm_bytes_per_s > 0) || !std::isfinite(timing.hbm_bytes_per_s)) {
    throw ConfigError("HBM bandwidth must be a positive number of bytes per second");
  }
  std::vector<double> seconds;
  seconds.reserve(layers.size());
  std::uint64_t input_bytes = timing.input_bytes;
  for (const Layer& layer : layers) {
    if (layer.compute_seconds) {
      if (!(*layer.compute_seconds >= 0) || !std::isfinite(*layer.compute_seconds)) {
        throw ConfigError("layer '" + layer.name + "': compute time must be finite and >= 0");
      }
      seconds.push_back(*layer.compute_seconds);
    } else {
      const double moved = static_cast<double>(layer.weight_bytes) +
                           static_cast<double>(input_bytes) +
                           static_cast<double>(layer.activation_bytes);
      seconds.push_back(moved / timing.hbm_bytes_per_s);
    }
    input_bytes = layer.activation_bytes;
  }
  return seconds;
}

}  // namespace npumem::plan
