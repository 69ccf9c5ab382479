# The optional CUDA backend (src/device/cuda/cuda_device.cc). NPUMEM_WITH_CUDA: AUTO builds
# it when the CUDA toolkit is found, ON requires it, OFF leaves it out. Sets
# NPUMEM_CUDA_ENABLED for the rest of the build.
set(NPUMEM_WITH_CUDA AUTO CACHE STRING "Build the CUDA backend: AUTO, ON or OFF")
set_property(CACHE NPUMEM_WITH_CUDA PROPERTY STRINGS AUTO ON OFF)

set(NPUMEM_CUDA_ENABLED OFF)
if(NPUMEM_WITH_CUDA STREQUAL "ON")
  find_package(CUDAToolkit REQUIRED)
  set(NPUMEM_CUDA_ENABLED ON)
elseif(NPUMEM_WITH_CUDA STREQUAL "AUTO")
  find_package(CUDAToolkit QUIET)
  set(NPUMEM_CUDA_ENABLED ${CUDAToolkit_FOUND})
elseif(NOT NPUMEM_WITH_CUDA STREQUAL "OFF")
  message(FATAL_ERROR "NPUMEM_WITH_CUDA is '${NPUMEM_WITH_CUDA}'; use AUTO, ON or OFF")
endif()

if(NPUMEM_CUDA_ENABLED)
  message(STATUS "npumem: CUDA backend on (toolkit ${CUDAToolkit_VERSION}, "
                 "${CUDAToolkit_LIBRARY_DIR})")
elseif(NPUMEM_WITH_CUDA STREQUAL "AUTO")
  message(STATUS "npumem: CUDA backend skipped: no CUDA toolkit found "
                 "(set CUDAToolkit_ROOT to point at one)")
else()
  message(STATUS "npumem: CUDA backend off (NPUMEM_WITH_CUDA=OFF)")
endif()
