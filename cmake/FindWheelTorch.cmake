# LibTorch from the torch wheel of the project's Python environment
# (scripts/setup.sh installs it; scripts/python_env.sh says where). CMake asks
# that interpreter for torch.utils.cmake_prefix_path, so nothing is downloaded
# at build time. A LibTorch the user names with -DCMAKE_PREFIX_PATH or
# -DTorch_DIR comes first: the wheel's path is only appended.
set(CMPI_PYTHON "" CACHE FILEPATH
    "Python of the project's environment (torch, transformers); default: scripts/python_env.sh's")
if(NOT CMPI_PYTHON)
  if(DEFINED ENV{CMPI_PYTHON})
    set(CMPI_PYTHON "$ENV{CMPI_PYTHON}" CACHE FILEPATH "" FORCE)
  elseif(DEFINED ENV{CMPI_VENV} AND EXISTS "$ENV{CMPI_VENV}/bin/python")
    set(CMPI_PYTHON "$ENV{CMPI_VENV}/bin/python" CACHE FILEPATH "" FORCE)
  elseif(EXISTS "$ENV{HOME}/.cache/cmpi-train/venv/bin/python")
    set(CMPI_PYTHON "$ENV{HOME}/.cache/cmpi-train/venv/bin/python" CACHE FILEPATH "" FORCE)
  endif()
endif()

set(cmpi_user_prefix_path "${CMAKE_PREFIX_PATH}")
if(CMPI_PYTHON AND NOT Torch_DIR)
  execute_process(
    COMMAND "${CMPI_PYTHON}" -c "import torch.utils; print(torch.utils.cmake_prefix_path)"
    OUTPUT_VARIABLE cmpi_wheel_torch_prefix
    ERROR_VARIABLE cmpi_wheel_torch_error
    RESULT_VARIABLE cmpi_wheel_torch_status
    OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(cmpi_wheel_torch_status EQUAL 0)
    list(APPEND CMAKE_PREFIX_PATH "${cmpi_wheel_torch_prefix}")
  else()
    message(STATUS "cmpi: ${CMPI_PYTHON} has no torch (${cmpi_wheel_torch_error})")
  endif()
endif()

# The CUDA wheel's CMake package (Caffe2Config) refuses to configure without a
# CUDA toolkit. On a machine without nvcc, link the wheel's CPU libraries
# directly: libtorch and libtorch_cpu and c10 are all a CPU build needs, and
# libtorch_cuda stays a runtime dependency of libtorch resolved through the
# wheel's own RUNPATH.
if(cmpi_wheel_torch_prefix AND NOT cmpi_user_prefix_path AND NOT CMAKE_CUDA_COMPILER AND NOT TARGET torch)
  get_filename_component(cmpi_torch_root "${cmpi_wheel_torch_prefix}/../.." ABSOLUTE)
  file(STRINGS "${cmpi_wheel_torch_prefix}/Torch/TorchConfigVersion.cmake" cmpi_torch_version_line
       REGEX "set\\(PACKAGE_VERSION \"")
  string(REGEX MATCH "[0-9]+\\.[0-9]+\\.[0-9]+" Torch_VERSION "${cmpi_torch_version_line}")
  add_library(torch INTERFACE IMPORTED)
  target_include_directories(torch SYSTEM INTERFACE "${cmpi_torch_root}/include"
                             "${cmpi_torch_root}/include/torch/csrc/api/include")
  target_link_libraries(torch INTERFACE "${cmpi_torch_root}/lib/libtorch.so"
                        "${cmpi_torch_root}/lib/libtorch_cpu.so" "${cmpi_torch_root}/lib/libc10.so")
  # The wheels are built with the C++11 ABI, as Debian's libraries are.
  target_compile_definitions(torch INTERFACE _GLIBCXX_USE_CXX11_ABI=1)
  set(Torch_FOUND TRUE)
  set(Torch_DIR "${cmpi_wheel_torch_prefix}/Torch (CPU libraries only: no CUDA toolkit here)")
endif()

# Torch's CMake package appends gencode flags for every architecture the
# wheel was built for (from sm_50, which nvcc 13 no longer knows) to
# CMAKE_CUDA_FLAGS; the project's own kernels build for
# CMAKE_CUDA_ARCHITECTURES only, so keep its flags as they were.
if(NOT Torch_FOUND)
  set(cmpi_cuda_flags_before_torch "${CMAKE_CUDA_FLAGS}")
  find_package(Torch QUIET)
  set(CMAKE_CUDA_FLAGS "${cmpi_cuda_flags_before_torch}")
endif()
if(NOT Torch_FOUND)
  message(FATAL_ERROR
    "cmpi: LibTorch not found. Run scripts/setup.sh (it installs the pinned torch wheel into "
    "~/.cache/cmpi-train/venv), or point -DCMAKE_PREFIX_PATH at a LibTorch of your own.")
endif()
if(Torch_VERSION VERSION_LESS 2.0)
  message(FATAL_ERROR "cmpi: LibTorch ${Torch_VERSION} at ${Torch_DIR} is older than 2.0")
endif()
message(STATUS "cmpi: LibTorch ${Torch_VERSION} from ${Torch_DIR}")

# PyTorch's wheels are built with a newer GCC than Debian's and export their
# own copies of libstdc++'s std::filesystem functions from libtorch.so. A
# program that lists libtorch.so before libstdc++.so.6 in its NEEDED entries
# binds std::filesystem::remove_all & co. to those copies, which crash here
# (a null call inside libtorch's remove_all). Naming libstdc++ first on every
# link line makes the program bind to the system's libstdc++.
add_link_options("SHELL:-Wl,--push-state,--no-as-needed -lstdc++ -Wl,--pop-state")
