// `npumem viz SNAPSHOT.json -o out.html`: turns a snapshot (npumem replay --record)
// into a self-contained HTML memory timeline.
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "commands.h"
#include "html_timeline.h"
#include "json_text.h"
#include "npumem/errors.h"

namespace npumem::cli {
namespace {

struct VizOptions {
  std::string snapshot_path;
  std::string output_path;
};

constexpr const char* kHowToRecord =
    "snapshots come from `npumem replay TRACE --record FILE` or npumem.MemoryHistory";

nlohmann::json read_snapshot(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw Error("cannot read snapshot " + path + ": " + std::strerror(errno));
  std::ostringstream text;
  text << file.rdbuf();
  nlohmann::json snapshot;
  try {
    snapshot = parse_json_text(text.str(), path);
  } catch (const ParseError& e) {
    // A syntax error's own text says where; other refusals keep their file:line.
    std::string problem = e.what();
    const std::string syntax = ": malformed JSON: ";
    if (const std::size_t at = problem.find(syntax); at != std::string::npos) {
      problem = problem.substr(at + syntax.size());
    }
    throw Error(path + " is not an npumem snapshot: it is not JSON (" + problem + "); " +
                kHowToRecord);
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
  const nlohmann::json snapshot = read_snapshot(options.snapshot_path);
  const std::string page = render_html_timeline(snapshot, options.snapshot_path);
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
      app.add_subcommand("viz", "Turn a memory snapshot (replay --record) into an HTML timeline");
  command->add_option("snapshot", options->snapshot_path, "snapshot JSON")
      ->required()
      ->check(CLI::ExistingFile);
  command->add_option("-o,--output", options->output_path, "HTML file to write")->required();
  command->callback([options, &exit_code] { exit_code = run_viz(*options); });
}

}  // namespace npumem::cli
