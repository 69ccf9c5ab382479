#include "onnx_lifetimes.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string_view>

#include "npumem/errors.h"

extern char** environ;

namespace npumem::cli {
namespace {

constexpr const char* kModule = "npumem.onnx_lifetimes";

struct ChildOutput {
  std::string out;
  int exit_code = -1;  // -1: killed by a signal
};

// The environment with `value` after what `name` held (a search path): the caller's own
// entries come first.
std::vector<std::string> environment_with_path_last(const std::string& name,
                                                    const std::string& value) {
  std::vector<std::string> entries;
  std::string path;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text = *entry;
    if (text.starts_with(name + "=")) {
      path = text.substr(name.size() + 1);
    } else {
      entries.push_back(text);
    }
  }
  entries.push_back(name + "=" + (path.empty() ? value : path + ":" + value));
  return entries;
}

std::vector<char*> pointers(std::vector<std::string>& texts) {
  std::vector<char*> result;
  for (std::string& text : texts) result.push_back(text.data());
  result.push_back(nullptr);
  return result;
}

// Runs args[0] (searched on PATH) with its stdout captured; stderr is the caller's.
ChildOutput run_capturing_stdout(std::vector<std::string> args, std::vector<std::string> env) {
  int pipe_ends[2];
  if (::pipe2(pipe_ends, O_CLOEXEC) != 0)
    throw OnnxToolError("pipe: " + std::string(std::strerror(errno)));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_ends[1], STDOUT_FILENO);
  std::vector<char*> argv = pointers(args);
  std::vector<char*> envp = pointers(env);
  pid_t pid = 0;
  const int spawn_error =
      posix_spawnp(&pid, args[0].c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_ends[1]);
  if (spawn_error != 0) {
    ::close(pipe_ends[0]);
    throw OnnxToolError("cannot run " + args[0] + ": " + std::strerror(spawn_error) +
                        " (NPUMEM_PYTHON names the Python interpreter)");
  }
  ChildOutput result;
  char buffer[65536];
  for (;;) {
    const ssize_t got = ::read(pipe_ends[0], buffer, sizeof buffer);
    if (got > 0) {
      result.out.append(buffer, static_cast<std::size_t>(got));
    } else if (got == 0 || errno != EINTR) {
      break;
    }
  }
  ::close(pipe_ends[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  return result;
}

std::string python_interpreter() {
  const char* chosen = std::getenv("NPUMEM_PYTHON");
  return chosen != nullptr && *chosen != '\0' ? chosen : NPUMEM_PYTHON;
}

// The build tree's package directory when this npumem was built with its Python package
// and the module is there; empty otherwise. It comes after the caller's PYTHONPATH, so that
// an installed npumem runs the package installed beside it, not a build tree that may be
// mid-rebuild.
std::string build_tree_pythonpath() {
  const std::filesystem::path dir = NPUMEM_BUILD_TREE_PYTHONPATH;
  if (dir.empty()) return {};
  std::error_code error;
  return std::filesystem::exists(dir / "npumem" / "onnx_lifetimes.py", error) ? dir.string()
                                                                              : std::string();
}

// The module's `--json` output. Its `{"error": ...}` object is thrown as Error (a bad
// model, exit 2) when bad_input, else as OnnxToolError (Python lacks onnx).
OnnxLifetimes parse_onnx_lifetimes_json(std::string_view text, bool bad_input) {
  const std::string what = std::string("the output of ") + kModule;
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw OnnxToolError(what + " is not JSON: " + e.what());
  }
  try {
    if (json.contains("error")) {
      const std::string message = json.at("error").get<std::string>();
      if (bad_input) throw Error(message);
      throw OnnxToolError(message);
    }
    // A JSON number past 2^64-1 reads as a float, and get<> would wrap it (or a
    // negative one) without a word.
    const auto whole = [&](const nlohmann::json& object, const char* field) {
      const nlohmann::json& value = object.at(field);
      if (!value.is_number_unsigned()) {
        throw OnnxToolError(what + ": " + field + " " + value.dump() +
                            " is not a whole number of at most 2^64-1");
      }
      return value.get<std::uint64_t>();
    };
    OnnxLifetimes lifetimes;
    lifetimes.weight_tensors = whole(json, "weight_tensors");
    lifetimes.weight_bytes = whole(json, "weight_bytes");
    lifetimes.input_tensors = whole(json, "input_tensors");
    lifetimes.input_bytes = whole(json, "input_bytes");
    for (const nlohmann::json& tensor : json.at("tensors")) {
      lifetimes.tensors.push_back(
          {whole(tensor, "bytes"), whole(tensor, "first_op"), whole(tensor, "last_op")});
    }
    return lifetimes;
  } catch (const nlohmann::json::exception& e) {
    throw OnnxToolError(what + " lacks a field: " + e.what());
  }
}

}  // namespace

OnnxLifetimes onnx_lifetimes(const std::string& model_path, const std::vector<std::string>& dims) {
  const std::string python = python_interpreter();
  std::vector<std::string> args = {python, "-m", kModule, "--json"};
  for (const std::string& dim : dims) {
    args.push_back("--dim");
    args.push_back(dim);
  }
  args.push_back("--");  // a model named -x is still a file
  args.push_back(model_path);
  const std::string package_dir = build_tree_pythonpath();
  std::vector<std::string> env;
  if (package_dir.empty()) {
    for (char** entry = environ; *entry != nullptr; ++entry) env.emplace_back(*entry);
  } else {
    env = environment_with_path_last("PYTHONPATH", package_dir);
  }
  const ChildOutput child = run_capturing_stdout(std::move(args), std::move(env));
  // The module exits 0 (lifetimes), 2 (a bad model) or 1 (no onnx), with JSON each time;
  // anything else (no JSON) means the module did not run.
  if (child.exit_code == 0 || ((child.exit_code == 1 || child.exit_code == 2) &&
                               child.out.find("\"error\"") != std::string::npos)) {
    return parse_onnx_lifetimes_json(child.out, child.exit_code == 2);
  }
  throw OnnxToolError("`" + python + " -m " + kModule + "` failed (exit " +
                      std::to_string(child.exit_code) +
                      "; what it wrote to stderr is above): it needs npumem's Python package (this "
                      "build's, with NPUMEM_BUILD_PYTHON=ON, or one "
                      "installed with pip) and python3-onnx; NPUMEM_PYTHON names the interpreter");
}

}  // namespace npumem::cli
