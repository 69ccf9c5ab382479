#include "cuda_device.h"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#include <charconv>
#include <chrono>

#include "npumem/errors.h"
#include "npumem/units.h"

namespace npumem {

struct CudaDevice::Driver {
  PFN_cuDeviceGet_v2000 device_get = nullptr;
  PFN_cuDeviceGetAttribute_v2000 device_get_attribute = nullptr;
  PFN_cuMemGetAllocationGranularity_v10020 get_granularity = nullptr;
  PFN_cuMemAddressReserve_v10020 address_reserve = nullptr;
  PFN_cuMemAddressFree_v10020 address_free = nullptr;
  PFN_cuMemCreate_v10020 create = nullptr;
  PFN_cuMemRelease_v10020 release = nullptr;
  PFN_cuMemMap_v10020 map = nullptr;
  PFN_cuMemSetAccess_v10020 set_access = nullptr;
  PFN_cuMemUnmap_v10020 unmap = nullptr;
  CUdevice device = 0;
  CUmemAllocationProp prop{};  // pinned device memory on this GPU
};

namespace {

// Used when the GPU has no virtual memory calls to ask: cudaMalloc's own page size.
constexpr std::uint64_t kFallbackGranularity = 2 * MiB;
// The driver ABI the entry points are requested at; their signatures date from 10.2.
constexpr unsigned kDriverAbiVersion = 12000;

// Makes the device current on this thread for the scope of a call, as the runtime
// and the cuMem* calls act on the current device and context.
class CurrentDevice {
 public:
  explicit CurrentDevice(int ordinal) {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    if (previous_ != ordinal) cudaSetDevice(ordinal);
    changed_ = previous_ != ordinal && previous_ >= 0;
  }
  ~CurrentDevice() {
    if (changed_) cudaSetDevice(previous_);
  }
  CurrentDevice(const CurrentDevice&) = delete;
  CurrentDevice& operator=(const CurrentDevice&) = delete;

 private:
  int previous_ = -1;
  bool changed_ = false;
};

DeviceStatus status_of(cudaError_t error) {
  if (error == cudaSuccess) return DeviceStatus::ok;
  cudaGetLastError();  // clears the (non-sticky) error so later calls start clean
  if (error == cudaErrorMemoryAllocation) return DeviceStatus::out_of_memory;
  if (error == cudaErrorNotSupported) return DeviceStatus::not_supported;
  return DeviceStatus::invalid_argument;
}

DeviceStatus status_of(CUresult result) {
  switch (result) {
    case CUDA_SUCCESS:
      return DeviceStatus::ok;
    case CUDA_ERROR_OUT_OF_MEMORY:
      return DeviceStatus::out_of_memory;
    case CUDA_ERROR_NOT_SUPPORTED:
      return DeviceStatus::not_supported;
    default:
      return DeviceStatus::invalid_argument;
  }
}

template <typename Function>
bool resolve(const char* symbol, Function& out) {
  void* function = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
  const cudaError_t error = cudaGetDriverEntryPointByVersion(symbol, &function, kDriverAbiVersion,
                                                             cudaEnableDefault, &found);
#else
  const cudaError_t error = cudaGetDriverEntryPoint(symbol, &function, cudaEnableDefault, &found);
#endif
  if (error != cudaSuccess || found != cudaDriverEntryPointSuccess || function == nullptr) {
    cudaGetLastError();
    return false;
  }
  out = reinterpret_cast<Function>(function);
  return true;
}

bool resolve_all(CudaDevice::Driver& d) {
  return resolve("cuDeviceGet", d.device_get) &&
         resolve("cuDeviceGetAttribute", d.device_get_attribute) &&
         resolve("cuMemGetAllocationGranularity", d.get_granularity) &&
         resolve("cuMemAddressReserve", d.address_reserve) &&
         resolve("cuMemAddressFree", d.address_free) && resolve("cuMemCreate", d.create) &&
         resolve("cuMemRelease", d.release) && resolve("cuMemMap", d.map) &&
         resolve("cuMemSetAccess", d.set_access) && resolve("cuMemUnmap", d.unmap);
}

// The driver's cuMem* calls for this GPU, and its granularity; null when the driver
// lacks them or the GPU does not support virtual memory management.
std::unique_ptr<const CudaDevice::Driver> load_driver(int ordinal, std::uint64_t& granularity) {
  auto driver = std::make_unique<CudaDevice::Driver>();
  if (!resolve_all(*driver) || driver->device_get(&driver->device, ordinal) != CUDA_SUCCESS) {
    return nullptr;
  }
  int supported = 0;
  if (driver->device_get_attribute(&supported,
                                   CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                                   driver->device) != CUDA_SUCCESS ||
      supported == 0) {
    return nullptr;
  }
  driver->prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  driver->prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  driver->prop.location.id = ordinal;
  std::size_t minimum = 0;
  if (driver->get_granularity(&minimum, &driver->prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) !=
          CUDA_SUCCESS ||
      minimum == 0) {
    return nullptr;
  }
  granularity = minimum;
  return driver;
}

int attribute(cudaDeviceAttr which, int ordinal) {
  int value = 0;
  if (cudaDeviceGetAttribute(&value, which, ordinal) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return value;
}

// Peak bandwidth of double-data-rate memory: 2 transfers per clock over the bus.
std::uint64_t memory_bandwidth(int ordinal) {
  const auto clock_khz = static_cast<std::uint64_t>(attribute(cudaDevAttrMemoryClockRate, ordinal));
  const auto bus_bits =
      static_cast<std::uint64_t>(attribute(cudaDevAttrGlobalMemoryBusWidth, ordinal));
  return 2 * clock_khz * 1000 * bus_bits / 8;
}

CUdeviceptr device_pointer(const void* ptr) {
  return reinterpret_cast<CUdeviceptr>(ptr);
}

[[noreturn]] void reject(std::string_view spec, const std::string& problem) {
  throw ConfigError("bad device spec '" + std::string(spec) + "': " + problem);
}

}  // namespace

int CudaDevice::parse_ordinal(std::string_view spec) {
  if (spec == "cuda") return 0;
  constexpr std::string_view kPrefix = "cuda:";
  if (!spec.starts_with(kPrefix)) reject(spec, "a CUDA device is 'cuda' or 'cuda:N'");
  const std::string_view digits = spec.substr(kPrefix.size());
  int ordinal = -1;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), ordinal);
  if (digits.empty() || error != std::errc() || end != digits.data() + digits.size() ||
      ordinal < 0) {
    reject(spec, "'" + std::string(digits) + "' is not a device index (a whole number, 0 or more)");
  }
  return ordinal;
}

int CudaDevice::device_count(std::string* why_none) {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    cudaGetLastError();
    if (why_none != nullptr) {
      *why_none = cudaGetErrorString(error);
      // The runtime's word for a machine without NVIDIA's driver too: say both.
      if (error == cudaErrorInsufficientDriver) {
        *why_none =
            "no NVIDIA driver is loaded, or it is older than this CUDA runtime: " + *why_none;
      }
    }
    return 0;
  }
  if (count == 0 && why_none != nullptr) *why_none = "the driver reports no GPU";
  return count;
}

CudaDevice::CudaDevice(int ordinal) : ordinal_(ordinal) {
  std::string why_none;
  const int count = device_count(&why_none);
  if (count == 0) reject(name(), "no CUDA device (" + why_none + ")");
  if (ordinal < 0 || ordinal >= count) {
    reject(name(), "no CUDA device " + std::to_string(ordinal) + " (this machine has " +
                       std::to_string(count) + ")");
  }
  const CurrentDevice current(ordinal_);
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  if (const cudaError_t error = cudaMemGetInfo(&free_bytes, &total_bytes); error != cudaSuccess) {
    cudaGetLastError();
    reject(name(), std::string("cudaMemGetInfo failed: ") + cudaGetErrorString(error));
  }
  capacity_bytes_ = total_bytes;
  granularity_bytes_ = kFallbackGranularity;
  driver_ = load_driver(ordinal_, granularity_bytes_);
  bandwidth_bytes_per_s_ = memory_bandwidth(ordinal_);
  l2_bytes_ = static_cast<std::uint64_t>(attribute(cudaDevAttrL2CacheSize, ordinal_));
}

// Whatever the allocator did not give back is returned here.
CudaDevice::~CudaDevice() {
  const CurrentDevice current(ordinal_);
  for (const auto& [ptr, bytes] : segments_) cudaFree(ptr);
  for (const auto& [handle, bytes] : chunks_) driver_->release(handle);
}

std::string CudaDevice::name() const {
  return "cuda:" + std::to_string(ordinal_);
}

TierInfo CudaDevice::tier_info(Tier tier) const {
  TierInfo info;
  info.tier = tier;
  if (tier != Tier::hbm) return info;
  info.present = true;
  info.capacity_bytes = capacity_bytes_;
  info.bandwidth_bytes_per_s = bandwidth_bytes_per_s_;
  info.granularity_bytes = granularity_bytes_;
  std::lock_guard lock(mutex_);
  info.used_bytes = used_bytes_;
  return info;
}

bool CudaDevice::valid_size(Tier tier, std::size_t bytes) const {
  return tier == Tier::hbm && bytes != 0 && bytes % granularity_bytes_ == 0;
}

void CudaDevice::account(std::int64_t bytes) {
  used_bytes_ = static_cast<std::uint64_t>(static_cast<std::int64_t>(used_bytes_) + bytes);
}

DeviceStatus CudaDevice::allocate_segment(Tier tier, std::size_t bytes, void** out) {
  if (out == nullptr || !valid_size(tier, bytes)) return DeviceStatus::invalid_argument;
  const CurrentDevice current(ordinal_);
  void* ptr = nullptr;
  if (const DeviceStatus status = status_of(cudaMalloc(&ptr, bytes)); status != DeviceStatus::ok) {
    return status;
  }
  std::lock_guard lock(mutex_);
  segments_.emplace(ptr, bytes);
  account(static_cast<std::int64_t>(bytes));
  *out = ptr;
  return DeviceStatus::ok;
}

// A pointer this device did not hand out (or a wrong size) is ignored, as SimDevice does.
void CudaDevice::free_segment(Tier /*tier*/, void* ptr, std::size_t bytes) {
  {
    std::lock_guard lock(mutex_);
    const auto segment = segments_.find(ptr);
    if (segment == segments_.end() || segment->second != bytes) return;
    segments_.erase(segment);
    account(-static_cast<std::int64_t>(bytes));
  }
  const CurrentDevice current(ordinal_);
  status_of(cudaFree(ptr));
}

DeviceStatus CudaDevice::reserve_address(std::size_t bytes, void** out) {
  if (!driver_) return DeviceStatus::not_supported;
  if (out == nullptr || !valid_size(Tier::hbm, bytes)) return DeviceStatus::invalid_argument;
  const CurrentDevice current(ordinal_);
  CUdeviceptr base = 0;
  const DeviceStatus status =
      status_of(driver_->address_reserve(&base, bytes, granularity_bytes_, 0, 0));
  if (status == DeviceStatus::ok) *out = reinterpret_cast<void*>(base);
  return status;
}

void CudaDevice::release_address(void* base, std::size_t bytes) {
  if (!driver_) return;
  const CurrentDevice current(ordinal_);
  driver_->address_free(device_pointer(base), bytes);
}

DeviceStatus CudaDevice::create_physical(Tier tier, std::size_t bytes, PhysicalHandle* out) {
  if (!driver_) return DeviceStatus::not_supported;
  if (out == nullptr || !valid_size(tier, bytes)) return DeviceStatus::invalid_argument;
  const CurrentDevice current(ordinal_);
  CUmemGenericAllocationHandle handle = 0;
  const DeviceStatus status = status_of(driver_->create(&handle, bytes, &driver_->prop, 0));
  if (status != DeviceStatus::ok) return status;
  std::lock_guard lock(mutex_);
  chunks_.emplace(handle, bytes);
  account(static_cast<std::int64_t>(bytes));
  *out = PhysicalHandle{handle};
  return DeviceStatus::ok;
}

void CudaDevice::release_physical(PhysicalHandle handle) {
  if (!driver_) return;
  {
    std::lock_guard lock(mutex_);
    const auto chunk = chunks_.find(handle.id);
    if (chunk == chunks_.end()) return;
    account(-static_cast<std::int64_t>(chunk->second));
    chunks_.erase(chunk);
  }
  const CurrentDevice current(ordinal_);
  driver_->release(handle.id);
}

DeviceStatus CudaDevice::map(void* addr, PhysicalHandle handle) {
  if (!driver_) return DeviceStatus::not_supported;
  std::size_t bytes = 0;
  {
    std::lock_guard lock(mutex_);
    const auto chunk = chunks_.find(handle.id);
    if (addr == nullptr || chunk == chunks_.end()) return DeviceStatus::invalid_argument;
    bytes = chunk->second;
  }
  const CurrentDevice current(ordinal_);
  const CUdeviceptr at = device_pointer(addr);
  if (const DeviceStatus mapped = status_of(driver_->map(at, bytes, 0, handle.id, 0));
      mapped != DeviceStatus::ok) {
    return mapped;
  }
  CUmemAccessDesc access{};
  access.location = driver_->prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  const DeviceStatus accessible = status_of(driver_->set_access(at, bytes, &access, 1));
  if (accessible != DeviceStatus::ok) driver_->unmap(at, bytes);
  return accessible;
}

void CudaDevice::unmap(void* addr, std::size_t bytes) {
  if (!driver_) return;
  const CurrentDevice current(ordinal_);
  driver_->unmap(device_pointer(addr), bytes);
}

double CudaDevice::copy(void* dst, Tier /*dst_tier*/, const void* src, Tier /*src_tier*/,
                        std::size_t bytes) {
  if (bytes == 0 || dst == nullptr || src == nullptr) return 0.0;
  const CurrentDevice current(ordinal_);
  const auto start = std::chrono::steady_clock::now();
  status_of(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault));
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

DeviceStatus CudaDevice::record_event(StreamId stream, EventHandle* out) {
  if (out == nullptr) return DeviceStatus::invalid_argument;
  const CurrentDevice current(ordinal_);
  cudaEvent_t event = nullptr;
  if (const DeviceStatus created =
          status_of(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
      created != DeviceStatus::ok) {
    return created;
  }
  const auto cuda_stream = reinterpret_cast<cudaStream_t>(static_cast<std::uintptr_t>(stream));
  if (const DeviceStatus recorded = status_of(cudaEventRecord(event, cuda_stream));
      recorded != DeviceStatus::ok) {
    cudaEventDestroy(event);
    return recorded;
  }
  *out = EventHandle{static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(event))};
  return DeviceStatus::ok;
}

// Anything but cudaSuccess (cudaErrorNotReady, or a failure) counts as not complete:
// holding a block longer is safe, reusing it early is not.
bool CudaDevice::event_completed(EventHandle event) {
  if (!event) return true;
  const cudaError_t result =
      cudaEventQuery(reinterpret_cast<cudaEvent_t>(static_cast<std::uintptr_t>(event.id)));
  if (result != cudaSuccess) cudaGetLastError();
  return result == cudaSuccess;
}

void CudaDevice::release_event(EventHandle event) {
  if (!event) return;
  status_of(cudaEventDestroy(reinterpret_cast<cudaEvent_t>(static_cast<std::uintptr_t>(event.id))));
}

}  // namespace npumem
