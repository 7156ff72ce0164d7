# Detects CUDA and NCCL without requiring either: the build works on machines
# with no GPU and no toolkit. Sets MUSTER_HAVE_CUDA and MUSTER_HAVE_NCCL.
#
# MUSTER_CUDA=auto  use CUDA/NCCL when a compiler and the library are found
# MUSTER_CUDA=on    fail the configure step when they are missing
# MUSTER_CUDA=off   never look
set(MUSTER_HAVE_CUDA OFF)
set(MUSTER_HAVE_NCCL OFF)

if(NOT MUSTER_CUDA MATCHES "^(auto|on|off)$")
  message(FATAL_ERROR "MUSTER_CUDA='${MUSTER_CUDA}' is not one of auto, on, off")
endif()

if(NOT MUSTER_CUDA STREQUAL "off")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    # Every major architecture this nvcc knows (H100/H200's 90 among them):
    # muster-train's kernels must launch on whatever GPU a job is given.
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES all-major)
    endif()
    enable_language(CUDA)
    # CMake 3.25 knows no CUDA 20 dialect; .cu files build as C++17.
    set(CMAKE_CUDA_STANDARD 17)
    # One CUDA runtime per process: the shared one that NCCL's users link
    # (CUDA::cudart), also for targets that link CUDA objects (static by default).
    set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
    find_package(CUDAToolkit)
    if(CUDAToolkit_FOUND)
      set(MUSTER_HAVE_CUDA ON)
      find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
      find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib64 /usr/local/cuda/lib)
      if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
        set(MUSTER_HAVE_NCCL ON)
        add_library(muster_nccl INTERFACE)
        target_include_directories(muster_nccl INTERFACE ${NCCL_INCLUDE_DIR})
        target_link_libraries(muster_nccl INTERFACE ${NCCL_LIBRARY} CUDA::cudart)
      endif()
    endif()
  endif()
  if(MUSTER_CUDA STREQUAL "on" AND NOT (MUSTER_HAVE_CUDA AND MUSTER_HAVE_NCCL))
    message(FATAL_ERROR "MUSTER_CUDA=on but CUDA (${MUSTER_HAVE_CUDA}) or NCCL (${MUSTER_HAVE_NCCL}) was not found")
  endif()
endif()
message(STATUS "muster: CUDA=${MUSTER_HAVE_CUDA} NCCL=${MUSTER_HAVE_NCCL}")
