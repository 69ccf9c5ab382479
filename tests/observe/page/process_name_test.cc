#include "observe/page/process_name.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace npumem::observe {
namespace {

TEST(ProcessName, APythonProcessIsNamedWithItsScriptOrModule) {
  EXPECT_EQ(process_display_name("python3", {"/usr/bin/python3", "/srv/models/serve.py", "--port"}),
            "python3 serve.py");
  EXPECT_EQ(process_display_name("python3", {"python3", "serve.py"}), "python3 serve.py");
  EXPECT_EQ(process_display_name("python3.11", {"python3.11", "-m", "npumem.torch", "capture"}),
            "python3.11 -m npumem.torch");
  EXPECT_EQ(process_display_name("python3", {"python3", "-m", "npumem.torch", "run", "--conf",
                                             "strategy:planned", "/work/train.py", "2"}),
            "python3 train.py")
      << "a runner module names the script it runs";
  EXPECT_EQ(process_display_name("python3", {"python3", "-c", "import npumem"}), "python3");
  EXPECT_EQ(process_display_name("python3", {"python3"}), "python3");
}

// A spawned multiprocessing worker was a bare `python3` beside its parent's row.
TEST(ProcessName, ASpawnedWorkerIsNamedAfterItsParent) {
  const std::vector<std::string> worker = {
      "/usr/bin/python3", "-c",
      "from multiprocessing.spawn import spawn_main; spawn_main(tracker_fd=5, pipe_handle=7)",
      "--multiprocessing-fork"};
  EXPECT_EQ(process_display_name("python3", worker, "python3 train.py"),
            "python3 train.py (worker)");
  EXPECT_EQ(process_display_name("python3", worker), "python3 (worker)");
}

TEST(ProcessName, AnyOtherProcessKeepsItsExecutablesName) {
  EXPECT_EQ(process_display_name("npumem", {"npumem", "replay", "a.trace"}), "npumem");
  EXPECT_EQ(process_display_name("server", {}), "server");
}

TEST(ProcessName, ThisProcessHasAName) {
  EXPECT_EQ(this_process_display_name().substr(0, 8), "observe_");
}

}  // namespace
}  // namespace npumem::observe
