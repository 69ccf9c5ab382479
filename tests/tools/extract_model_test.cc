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
  EXPECT_NE(run_command(script + "resnet18", dir).exit_code, 0);  // no output asked for
  const auto unknown = run_command(script + "no_such_net --records x", dir);
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_NE(unknown.err.find("unknown torchvision model 'no_such_net'"), std::string::npos)
      << unknown.err;
}

}  // namespace
}  // namespace npumem::plan
