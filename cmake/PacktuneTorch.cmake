# Finds LibTorch: Debian's libtorch-dev (1.13, CPU) by default, or any other LibTorch given
# through CMAKE_PREFIX_PATH, e.g. a PyTorch installation's torch.utils.cmake_prefix_path.
# Sets TORCH_LIBRARIES and PACKTUNE_WITH_CUDA; with a CUDA LibTorch every
# target that links it is compiled with PACKTUNE_WITH_CUDA defined.
find_package(Torch REQUIRED)

# TorchConfig.cmake looks for libc10 (and libtorch, which it only reports) with find_library, whose
# system paths come before the LibTorch's own lib/. With Debian's libtorch-dev installed too, a
# PyTorch wheel's LibTorch would then link Debian's libc10.so next to its own libtorch: take the
# libraries that sit next to the headers in use.
foreach(_lib c10 TORCH)
  string(TOLOWER "${_lib}" _name)
  set(_own "${TORCH_INSTALL_PREFIX}/lib/lib${_name}.so")
  if(EXISTS "${_own}" AND NOT "${${_lib}_LIBRARY}" STREQUAL "${_own}")
    set(_fixed "")
    foreach(_item IN LISTS TORCH_LIBRARIES)
      if(_item STREQUAL "${${_lib}_LIBRARY}")
        set(_item "${_own}")
      endif()
      list(APPEND _fixed "${_item}")
    endforeach()
    set(TORCH_LIBRARIES "${_fixed}")
    set(${_lib}_LIBRARY "${_own}" CACHE FILEPATH "LibTorch's lib${_name}" FORCE)
  endif()
endforeach()

# A CUDA LibTorch brings torch_cuda; the Debian one does not. Code that needs CUDA (streams,
# graphs) is compiled only with PACKTUNE_WITH_CUDA; everything else asks torch at run time.
if(TARGET torch_cuda OR TORCH_CUDA_LIBRARIES)
  set(PACKTUNE_WITH_CUDA ON)
  set_property(TARGET torch APPEND PROPERTY INTERFACE_COMPILE_DEFINITIONS PACKTUNE_WITH_CUDA)
  # A wheel's libtorch_cuda.so finds NCCL, cuSPARSELt, ... in the sibling nvidia/ packages through
  # its RPATH, but the linker looks in the -rpath folders first, where the CUDA toolkit's own,
  # older NCCL would answer (undefined ncclCommResume): point it to the wheel's.
  file(GLOB _wheel_lib_dirs LIST_DIRECTORIES true "${TORCH_INSTALL_PREFIX}/../nvidia/*/lib")
  foreach(_dir IN LISTS _wheel_lib_dirs)
    set_property(TARGET torch APPEND PROPERTY INTERFACE_LINK_OPTIONS "LINKER:-rpath-link,${_dir}")
  endforeach()
else()
  set(PACKTUNE_WITH_CUDA OFF)
endif()
message(STATUS "packtune: LibTorch ${Torch_VERSION} from ${TORCH_INSTALL_PREFIX}, "
  "CUDA ${PACKTUNE_WITH_CUDA}")
