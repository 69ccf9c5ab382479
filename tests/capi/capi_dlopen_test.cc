// Loads libnpumem.so the way PyTorch's CUDAPluggableAllocator does: dlopen, then
// dlsym of the two entry points with its function-pointer types. This binary does not
// link npumem, so everything it reaches goes through the shared library.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/types.h>

#include <cstdlib>
#include <cstring>

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

}  // namespace
