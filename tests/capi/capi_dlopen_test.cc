// Loads libnpumem.so the way PyTorch's CUDAPluggableAllocator does: dlopen, then
// dlsym of the two entry points with its function-pointer types. This binary does not
// link npumem, so everything it reaches goes through the shared library.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/types.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "npumem/npumem.h"

namespace {

// PyTorch's declarations (c10/cuda/CUDAStream.h, CUDAPluggableAllocator.h).
using cudaStream_t = struct CUstream_st*;
using MallocFn = void* (*)(ssize_t size, int device, cudaStream_t stream);
using FreeFn = void (*)(void* ptr, ssize_t size, int device, cudaStream_t stream);
using LastErrorFn = const char* (*)();

template <typename Fn>
Fn resolve(void* library, const char* name) {
  void* symbol = dlsym(library, name);
  Fn function = nullptr;
  if (symbol != nullptr) std::memcpy(&function, &symbol, sizeof function);
  return function;
}

class CapiDlopen : public ::testing::Test {
 protected:
  void SetUp() override {
    library_ = dlopen(NPUMEM_SHARED_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(library_, nullptr) << dlerror();
  }
  void TearDown() override {
    if (library_ != nullptr) dlclose(library_);
  }

  void* library_ = nullptr;
};

TEST_F(CapiDlopen, ThePluggableAllocatorEntryPointsResolveAndWork) {
  const auto npumem_malloc = resolve<MallocFn>(library_, "npumem_malloc");
  const auto npumem_free = resolve<FreeFn>(library_, "npumem_free");
  const auto npumem_last_error = resolve<LastErrorFn>(library_, "npumem_last_error");
  ASSERT_NE(npumem_malloc, nullptr);
  ASSERT_NE(npumem_free, nullptr);
  ASSERT_NE(npumem_last_error, nullptr);

  ASSERT_EQ(setenv("NPUMEM_DEVICE", "sim:hbm=1GiB,ddr=0,backing=host", 1), 0);
  auto* stream = reinterpret_cast<cudaStream_t>(0x10);  // ignored, as documented
  void* ptr = npumem_malloc(1 << 20, 0, stream);
  ASSERT_NE(ptr, nullptr) << npumem_last_error();
  std::memset(ptr, 0xAB, 1 << 20);
  npumem_free(ptr, 1 << 20, 0, stream);
  EXPECT_STREQ(npumem_last_error(), "");

  EXPECT_EQ(npumem_malloc(ssize_t{2} << 30, 0, stream), nullptr);
  EXPECT_NE(std::strstr(npumem_last_error(), "2.00 GiB"), nullptr) << npumem_last_error();
  unsetenv("NPUMEM_DEVICE");
}

// A leak report's backtrace begins at the library's caller (here, this test), not in
// the library: with 16 frames, five of them were libnpumem.so's own.
TEST_F(CapiDlopen, LeakBacktracesBeginAtTheCallerOfTheLibrary) {
  const auto create =
      resolve<decltype(&npumem_allocator_create)>(library_, "npumem_allocator_create");
  const auto destroy =
      resolve<decltype(&npumem_allocator_destroy)>(library_, "npumem_allocator_destroy");
  const auto allocate = resolve<decltype(&npumem_allocate)>(library_, "npumem_allocate");
  const auto iteration = resolve<decltype(&npumem_iteration)>(library_, "npumem_iteration");
  const auto start =
      resolve<decltype(&npumem_leak_check_start)>(library_, "npumem_leak_check_start");
  const auto report = resolve<decltype(&npumem_leak_report)>(library_, "npumem_leak_report");
  const auto string_free = resolve<decltype(&npumem_string_free)>(library_, "npumem_string_free");
  ASSERT_TRUE(create && destroy && allocate && iteration && start && report && string_free);
  npumem_allocator_t* allocator = nullptr;
  ASSERT_EQ(create("sim:hbm=1GiB,ddr=0", nullptr, &allocator), NPUMEM_OK);
  ASSERT_EQ(start(allocator, 0.0, 1, 1), NPUMEM_OK);
  for (int i = 0; i < 5; ++i) {
    void* leaked = nullptr;
    ASSERT_EQ(allocate(allocator, 64 << 10, &leaked), NPUMEM_OK);
    ASSERT_EQ(iteration(allocator), NPUMEM_OK);
  }
  int leaking = 0;
  char* text = nullptr;
  ASSERT_EQ(report(allocator, &leaking, &text), NPUMEM_OK);
  const std::string leak_report = text;
  string_free(text);
  destroy(allocator);
  EXPECT_EQ(leaking, 1) << leak_report;
  const std::size_t first_frame = leak_report.find("      at ");
  ASSERT_NE(first_frame, std::string::npos) << leak_report;
  const std::string line =
      leak_report.substr(first_frame, leak_report.find('\n', first_frame) - first_frame);
  EXPECT_EQ(line.find("libnpumem"), std::string::npos) << leak_report;
  EXPECT_NE(line.find("capi_dlopen_test"), std::string::npos) << leak_report;
}

}  // namespace
