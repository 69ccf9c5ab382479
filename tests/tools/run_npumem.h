// Runs the built npumem command (or any command) in a test and captures its exit code
// and what it printed.
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

inline void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path) << text;
}

// A fresh directory for one test's files, removed at the end of the test.
class TempDir {
 public:
  TempDir()
      : path_(
            std::filesystem::temp_directory_path() /
            ("npumem_cli_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++))) {
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::filesystem::path file(const std::string& name) const { return path_ / name; }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

// Runs `command` through the shell; stdout and stderr go to files in `dir`.
inline CommandOutput run_command(const std::string& command, const TempDir& dir) {
  const auto out_path = dir.file("command.out");
  const auto err_path = dir.file("command.err");
  const std::string line = command + " >" + out_path.string() + " 2>" + err_path.string();
  const int status = std::system(line.c_str());
  CommandOutput output;
  output.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  output.out = read_file(out_path);
  output.err = read_file(err_path);
  return output;
}

inline CommandOutput run_npumem(const std::string& arguments, const TempDir& dir) {
  return run_command(std::string(NPUMEM_BIN_DIR) + "/npumem " + arguments, dir);
}

// `arguments` go through the shell as written; quote paths with spaces. `environment`
// ("NAME=value ...") is set for the command only.
inline CommandOutput run_npumem(const std::string& arguments, const std::string& environment = "") {
  const TempDir dir;
  return run_command(environment + " " + std::string(NPUMEM_BIN_DIR) + "/npumem " + arguments, dir);
}

}  // namespace npumem::cli::testing
