// The HTML memory timeline of `npumem viz`, drawn from a snapshot JSON, for Python.
// Built when the tools layer (which renders it) is part of the build.
#include <string>
#include <vector>

#include "bindings.h"
#include "html_timeline.h"

namespace py = pybind11;

namespace npumem::python {

void bind_timeline(py::module_& module) {
  module.def(
      "html_timeline",
      [](const std::string& snapshot_json, const std::string& title) {
        {
          // Parsed to be checked, then dropped: the page carries the text itself.
          const nlohmann::json snapshot = nlohmann::json::parse(snapshot_json);
          cli::check_snapshot(snapshot);
        }
        return cli::render_html_timeline("[" + snapshot_json + "]", title);
      },
      py::arg("snapshot_json"), py::arg("title"),
      "A self-contained HTML page: memory over time, the segment map, the largest blocks");
}

}  // namespace npumem::python
