// Runs the built npumem command in a test and captures what it printed.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace npumem::cli::testing {

struct CommandOutput {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream file(path);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

// `arguments` go through the shell as written; quote paths with spaces. `environment`
// ("NAME=value ...") is set for the command only.
inline CommandOutput run_npumem(const std::string& arguments, const std::string& environment = "") {
  const std::filesystem::path dir = std::filesystem::temp_directory_path();
  const std::string tag = std::to_string(::getpid());
  const auto out_path = dir / ("npumem_cli_test_" + tag + ".out");
  const auto err_path = dir / ("npumem_cli_test_" + tag + ".err");
  const std::string command = environment + " " + std::string(NPUMEM_BIN_DIR) + "/npumem " +
                              arguments + " >" + out_path.string() + " 2>" + err_path.string();
  const int status = std::system(command.c_str());
  CommandOutput output;
  output.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  output.out = read_file(out_path);
  output.err = read_file(err_path);
  std::filesystem::remove(out_path);
  std::filesystem::remove(err_path);
  return output;
}

}  // namespace npumem::cli::testing
