// tools/scripts/extract_model.py on torchvision's resnet18 (about 10 s of CPU); skipped without
// torch.
#include <gtest/gtest.h>

#include <filesystem>

#include "npumem/plan.h"
#include "plan_model_json.h"
#include "run_npumem.h"

namespace npumem::plan {
namespace {

using cli::testing::run_command;
using cli::testing::TempDir;

constexpr const char* kPython = "/usr/bin/python3";

bool torch_available(const TempDir& dir) {
  return std::filesystem::exists(kPython) &&
         run_command(std::string(kPython) + " -c 'import torch, torchvision'", dir).exit_code == 0;
}

std::vector<TensorLifetime> records_of(const std::filesystem::path& path) {
  return parse_lifetime_records(cli::testing::read_file(path), path.string());
}

TEST(ExtractModelTest, Resnet18RecordsAndLayers) {
  TempDir dir;
  if (!torch_available(dir)) GTEST_SKIP() << "no torch for " << kPython;
  const auto result =
      run_command(std::string(kPython) +
                      " " NPUMEM_SOURCE_DIR "/tools/scripts/extract_model.py resnet18 --records " +
                      dir.file("r.records").string() + " --layers " + dir.file("r.json").string(),
                  dir);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto tensors = records_of(dir.file("r.records"));
  EXPECT_EQ(tensors.size(), 51u);
  EXPECT_EQ(memory_lower_bound(tensors, 64), 6'422'528u);  // ../shared/records/SUMMARY.md
  const std::filesystem::path shared = NPUMEM_SHARED_DIR "/records/resnet18.records";
  if (std::filesystem::exists(shared)) {
    const auto published = records_of(shared);
    ASSERT_EQ(published.size(), tensors.size());
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      EXPECT_EQ(tensors[i].bytes, published[i].bytes) << i;
      EXPECT_EQ(tensors[i].first_op, published[i].first_op) << i;
      EXPECT_EQ(tensors[i].last_op, published[i].last_op) << i;
    }
  }
  const cli::ModelFile model = cli::read_model_json(dir.file("r.json").string());
  EXPECT_EQ(model.name, "resnet18");
  EXPECT_EQ(model.input_bytes, 3u * 224 * 224 * 4);
  EXPECT_EQ(model.layers.size(), 51u);
  std::uint64_t weights = 0;
  for (const Layer& layer : model.layers) weights += layer.weight_bytes;
  const std::uint64_t parameters = 11'689'512u * 4;  // resnet18's parameters, float32
  EXPECT_GE(weights, parameters);                    // plus batch-norm buffers
  EXPECT_LT(weights, parameters + parameters / 100);
  EXPECT_EQ(model.layers.front().name, "conv1");
}

TEST(ExtractModelTest, BadArgumentsFail) {
  TempDir dir;
  if (!torch_available(dir)) GTEST_SKIP() << "no torch for " << kPython;
  const std::string script =
      std::string(kPython) + " " NPUMEM_SOURCE_DIR "/tools/scripts/extract_model.py ";
  EXPECT_EQ(run_command(script + "resnet18", dir).exit_code, 2);  // no output asked for
  // Each bad input: exit 2 and one line naming it, no traceback.
  const std::pair<std::string, std::string> bad[] = {
      {"no_such_net --records x", "unknown torchvision model 'no_such_net'"},
      {"resnet18 --input 1,0,2 --records x", "--input wants positive sizes"},
      {"no_such.module:f --records x", "cannot import module 'no_such.module'"},
      {"os:getcwd --records x", "os:getcwd did not make a torch.nn.Module"},
      {"os:no_such_factory --records x", "module 'os' has no 'no_such_factory'"},
      {"os:sep --records x", "os:sep is not a model factory to call (it is a str)"},
      {"resnet --records x", "resnet is not a model factory to call (it is a module)"},
      {"ResNet --records x", "ResNet() did not make a model: TypeError: "},
      {"resnet18 --records .", "--records .: is a directory, not a file to write"},
      {"resnet18 --input 1,100,224,224 --records x",
       "resnet18 cannot run on an input of shape 1,100,224,224: RuntimeError: "},
      {"resnet18 --layers /nonexistent/dir/a.json",
       "--layers /nonexistent/dir/a.json: no "
       "directory /nonexistent/dir"},
  };
  // A model with data-dependent control flow, which torch.fx cannot trace.
  cli::testing::write_text(dir.file("branchy.py"),
                           "import torch\n"
                           "class Branchy(torch.nn.Module):\n"
                           "    def forward(self, x):\n"
                           "        return x if x.sum() > 0 else -x\n"
                           "def make():\n"
                           "    return Branchy()\n");
  const auto untraceable = run_command(
      "PYTHONPATH=" + dir.file("").string() + " " + script + "branchy:make --input 2,3 --records x",
      dir);
  EXPECT_EQ(untraceable.exit_code, 2) << untraceable.err;
  EXPECT_NE(untraceable.err.find("extract_model: branchy:make cannot be traced with torch.fx"),
            std::string::npos)
      << untraceable.err;
  for (const auto& [arguments, message] : bad) {
    const auto result = run_command(script + arguments, dir);
    EXPECT_EQ(result.exit_code, 2) << arguments << ": " << result.err;
    EXPECT_NE(result.err.find("extract_model: " + message), std::string::npos)
        << arguments << ": " << result.err;
    EXPECT_EQ(result.err.find("Traceback"), std::string::npos) << arguments << ": " << result.err;
  }
}

}  // namespace
}  // namespace npumem::plan
