// `npumem viz SNAPSHOT.json... -o out.html`: turns snapshots (npumem replay --record),
// one per device, into a self-contained HTML memory timeline with a device selector.
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>
#include <vector>

#include "commands.h"
#include "html_timeline.h"
#include "input_file.h"
#include "json_text.h"
#include "npumem/errors.h"

namespace npumem::cli {
namespace {

struct VizOptions {
  std::vector<std::string> snapshot_paths;
  std::string output_path;
};

constexpr const char* kHowToRecord =
    "snapshots come from `npumem replay TRACE --record FILE` or npumem.MemoryHistory";

nlohmann::json read_snapshot(const std::string& path) {
  const std::string text = read_input_file(path, "snapshot");
  nlohmann::json snapshot;
  try {
    snapshot = parse_json_text(text, path);
  } catch (const ParseError& e) {
    // A syntax error's own text says where; other refusals (nesting deeper than npumem
    // reads, a number out of range) are JSON all the same, and keep their file:line.
    std::string problem = e.what();
    const std::string syntax = ": malformed JSON: ";
    if (const std::size_t at = problem.find(syntax); at != std::string::npos) {
      throw Error(path + " is not an npumem snapshot: it is not JSON (" +
                  problem.substr(at + syntax.size()) + "); " + kHowToRecord);
    }
    throw Error(path + " is not an npumem snapshot: " + problem + "; " + kHowToRecord);
  }
  try {
    check_snapshot(snapshot);
    return snapshot;
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + " is not an npumem snapshot: " + without_exception_id(e) + "; " +
                kHowToRecord);
  } catch (const Error& e) {
    throw Error(path + ": " + e.what() + "; " + kHowToRecord);
  }
}

int run_viz(const VizOptions& options) {
  std::vector<std::pair<std::string, std::string>> inputs;
  for (const std::string& path : options.snapshot_paths) inputs.emplace_back("a snapshot", path);
  check_outputs_apart(inputs, {{"--output", options.output_path}});
  std::set<std::filesystem::path> seen;
  for (const std::string& path : options.snapshot_paths) {
    // One snapshot per device: the same file twice would draw one device as two.
    if (!seen.insert(std::filesystem::weakly_canonical(path)).second) {
      throw ConfigError("snapshot " + path + " is given twice");
    }
  }
  std::vector<nlohmann::json> snapshots;
  std::string title;
  for (const std::string& path : options.snapshot_paths) {
    snapshots.push_back(read_snapshot(path));
    title += (title.empty() ? "" : ", ") + path;
  }
  const std::string page = render_html_timeline(snapshots, title);
  std::ofstream out(options.output_path, std::ios::binary);
  if (!out) {
    throw Error("cannot write " + options.output_path + ": " + std::strerror(errno));
  }
  out << page;
  out.close();
  if (!out) throw Error("cannot write " + options.output_path + ": write failed");
  std::cout << "timeline written to " << options.output_path << " (" << page.size()
            << " bytes; open it in a browser)\n";
  return kExitOk;
}

}  // namespace

void add_viz_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<VizOptions>();
  CLI::App* command =
      app.add_subcommand("viz", "Turn memory snapshots (replay --record) into an HTML timeline");
  command->add_option("snapshots", options->snapshot_paths, "snapshot JSON, one per device")
      ->required()
      ->check(CLI::ExistingFile);
  command->add_option("-o,--output", options->output_path, "HTML file to write")->required();
  command->callback([options, &exit_code] { exit_code = run_viz(*options); });
}

}  // namespace npumem::cli
