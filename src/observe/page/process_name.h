// The name a stats page gives its process. An interpreter's own name says little when
// several of its scripts run (three `python3` rows in `npumem smi`), so for Python it
// names the script or module too.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace npumem::observe {

// From the executable's name (/proc/PID/comm) and the command line: "python3 serve.py"
// for `python3 /srv/serve.py --port 80` and for a module running a script (`python3 -m
// npumem.torch run serve.py`), "python3 -m pkg.mod" for `python3 -m pkg.mod`, `comm`
// itself otherwise. A multiprocessing worker started by spawn (`--multiprocessing-fork`)
// is its parent's name (`parent`, when known) and " (worker)".
std::string process_display_name(std::string_view comm, const std::vector<std::string>& args,
                                 std::string_view parent = {});

// process_display_name of the calling process; "?" when /proc says nothing.
std::string this_process_display_name();

}  // namespace npumem::observe
