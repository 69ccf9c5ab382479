#include "observe/page/process_name.h"

#include <fstream>
#include <iterator>

namespace npumem::observe {

std::string process_display_name(std::string_view comm, const std::vector<std::string>& args) {
  std::string name(comm);
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

std::string this_process_display_name() {
  std::ifstream comm_file("/proc/self/comm");
  std::string comm;
  std::getline(comm_file, comm);
  if (comm.empty()) return "?";
  std::ifstream cmdline("/proc/self/cmdline", std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(cmdline)),
                         std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  for (std::size_t start = 0; start < text.size();) {
    const std::size_t end = text.find('\0', start);
    args.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return process_display_name(comm, args);
}

}  // namespace npumem::observe
