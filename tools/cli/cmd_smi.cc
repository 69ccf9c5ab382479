// `npumem smi [-t memory -i ID] [--json]`: like npu-smi info, every device in use by
// a process running npumem, with the processes (read from their stats pages).
#include <iostream>
#include <memory>
#include <optional>

#include "commands.h"
#include "json_text.h"
#include "npumem/errors.h"
#include "smi_view.h"

namespace npumem::cli {
namespace {

struct SmiOptions {
  std::optional<std::string> type;
  std::optional<int> id;
  bool json = false;
};

int run_smi(const SmiOptions& options) {
  if (options.type && !options.id) throw Error("smi -t " + *options.type + " needs -i ID");
  const std::vector<DeviceView> devices = device_views(read_stats_pages());
  if (options.id) {
    const DeviceView& device = device_by_id(devices, *options.id);
    if (options.json) {
      std::cout << json_text(smi_json({device})) << "\n";  // {"devices": [...]}, as without -i
    } else {
      std::cout << smi_memory_detail(device);
    }
    return kExitOk;
  }
  if (options.json) {
    std::cout << json_text(smi_json(devices)) << "\n";
  } else {
    std::cout << smi_table(devices, local_time_text());
  }
  return kExitOk;
}

}  // namespace

void add_smi_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<SmiOptions>();
  CLI::App* command =
      app.add_subcommand("smi", "Show the devices and processes using npumem (like npu-smi info)");
  command->add_option("-t,--type", options->type, "detail to show for the device of -i")
      ->check(CLI::IsMember({"memory"}));
  command->add_option("-i,--id", options->id, "device id (the ID column)")
      ->check(nonnegative_check());
  command->add_flag("--json", options->json, "print JSON");
  command->callback([options, &exit_code] { exit_code = run_smi(*options); });
}

}  // namespace npumem::cli
