// npumem._core.advise_buckets: `npumem advise buckets` for Python, as the JSON text
// its --json prints (npumem.advise_buckets turns it into a dict). Built with the tools
// layer, which makes the advice.
#include <string>

#include "bindings.h"
#include "bucket_advisor.h"
#include "bucket_report.h"
#include "trace.h"

namespace py = pybind11;

namespace npumem::python {

void bind_advise(py::module_& module) {
  module.def(
      "advise_buckets",
      [](const std::string& trace_path, std::size_t max_buckets, double tolerance,
         const std::string& device_spec) {
        cli::BucketAdviceOptions options;
        options.max_buckets = max_buckets;
        options.tolerance = tolerance;
        options.replay.device_spec = device_spec;
        py::gil_scoped_release unlocked;
        const cli::BucketAdvice advice = cli::advise_buckets(cli::read_trace(trace_path), options);
        return cli::bucket_advice_json(advice).dump();
      },
      py::arg("trace_path"), py::arg("max_buckets"), py::arg("tolerance"), py::arg("device_spec"));
}

}  // namespace npumem::python
