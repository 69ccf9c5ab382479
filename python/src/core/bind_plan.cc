// npumem._core.plan_memory / plan_shard / plan_recompute: `npumem plan`'s plans for
// Python, as the JSON text its --json prints (npumem.plan turns it into objects).
// Built with the tools layer, which makes the reports.
#include <chrono>
#include <string>

#include "bindings.h"
#include "npumem/units.h"
#include "plan_requests.h"

namespace py = pybind11;

namespace npumem::python {

void bind_plan(py::module_& module) {
  module.def(
      "plan_memory",
      [](const std::string& records, const std::string& source, std::uint64_t alignment,
         double time_limit_s, std::uint64_t iterations, std::uint64_t seed, bool offsets) {
        plan::MemoryPlanOptions options;
        options.alignment = alignment;
        options.time_limit = plan::time_limit_from_seconds(time_limit_s);
        options.max_search_iterations = iterations;
        options.seed = seed;
        py::gil_scoped_release unlocked;
        const auto run = cli::run_memory_plan(records, source, options, offsets);
        return cli::memory_report_json(run->report).dump();
      },
      py::arg("records"), py::arg("source"), py::arg("alignment"), py::arg("time_limit_s"),
      py::arg("iterations"), py::arg("seed"), py::arg("offsets"));
  module.def(
      "plan_shard",
      [](const std::string& model, const std::string& source, std::uint64_t hbm_bytes,
         double load_bytes_per_s, double hbm_bytes_per_s) {
        const cli::LayerPlanRequest request{hbm_bytes, load_bytes_per_s, hbm_bytes_per_s};
        return cli::shard_report_json(cli::run_shard_plan(model, source, request)->report).dump();
      },
      py::arg("model"), py::arg("source"), py::arg("hbm_bytes"), py::arg("load_bytes_per_s"),
      py::arg("hbm_bytes_per_s"));
  module.def(
      "plan_recompute",
      [](const std::string& model, const std::string& source, std::uint64_t budget_bytes,
         double hbm_bytes_per_s) {
        const cli::LayerPlanRequest request{budget_bytes, 50e9, hbm_bytes_per_s};
        return cli::recompute_report_json(cli::run_recompute_plan(model, source, request)->report)
            .dump();
      },
      py::arg("model"), py::arg("source"), py::arg("budget_bytes"), py::arg("hbm_bytes_per_s"));
  module.def(
      "parse_bandwidth", [](const std::string& text) { return parse_bandwidth(text); },
      py::arg("text"), "Bytes per second from '50GB/s', '1.2TB/s' or a number");
}

}  // namespace npumem::python
