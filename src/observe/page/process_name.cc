#include "observe/page/process_name.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <utility>

namespace npumem::observe {

std::string process_display_name(std::string_view comm, const std::vector<std::string>& args,
                                 std::string_view parent) {
  std::string name(comm);
  // A multiprocessing worker started by spawn runs `-c` code: it was a bare `python3`
  // beside its parent's row.
  if (name.starts_with("python") &&
      std::find(args.begin(), args.end(), "--multiprocessing-fork") != args.end()) {
    return (parent.empty() ? name : std::string(parent)) + " (worker)";
  }
  if (!name.starts_with("python") || args.size() < 2 || args[1].empty()) return name;
  const auto base = [](const std::string& path) { return path.substr(path.rfind('/') + 1); };
  if (args[1] == "-m" && args.size() >= 3) {
    // A runner module (python3 -m npumem.torch run train.py) names the script it runs.
    for (std::size_t i = 3; i < args.size(); ++i) {
      if (args[i].ends_with(".py")) return name + " " + base(args[i]);
    }
    return name + " -m " + args[2];
  }
  if (args[1].front() == '-') return name;  // `-c CODE` and the like name no file
  return name + " " + base(args[1]);
}

namespace {

// `/proc/<process>/comm` and its command line, split at its NULs.
std::pair<std::string, std::vector<std::string>> command_of(const std::string& process) {
  std::ifstream comm_file("/proc/" + process + "/comm");
  std::string comm;
  std::getline(comm_file, comm);
  std::ifstream cmdline("/proc/" + process + "/cmdline", std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(cmdline)),
                         std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  for (std::size_t start = 0; start < text.size();) {
    const std::size_t end = text.find('\0', start);
    args.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return {comm, args};
}

}  // namespace

std::string this_process_display_name() {
  const auto [comm, args] = command_of("self");
  if (comm.empty()) return "?";
  std::string parent;
  if (std::find(args.begin(), args.end(), "--multiprocessing-fork") != args.end()) {
    const auto [parent_comm, parent_args] = command_of(std::to_string(::getppid()));
    if (!parent_comm.empty()) parent = process_display_name(parent_comm, parent_args);
  }
  return process_display_name(comm, args, parent);
}

}  // namespace npumem::observe
