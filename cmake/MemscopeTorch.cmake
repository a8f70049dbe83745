# LibTorch for the components that need it (the trainer, the CPU capture
# library): found once the same way, with the same reasons in the feature
# summary. A macro, so that return() leaves the calling directory's file.
macro(memscope_require_torch component)
  find_package(Torch QUIET)
  if(NOT Torch_FOUND)
    memscope_skip(${component} "LibTorch not found (apt-get install libtorch-dev)")
    return()
  endif()
  # A LibTorch built with the pre-C++11 ABI (pip wheels before 2.7) cannot share
  # std::string with memscope_core unless the whole build uses that ABI.
  if(TORCH_CXX_FLAGS MATCHES "_GLIBCXX_USE_CXX11_ABI=0" AND NOT CMAKE_CXX_FLAGS MATCHES "_GLIBCXX_USE_CXX11_ABI=0")
    memscope_skip(${component} "LibTorch uses the pre-C++11 ABI: configure with -DCMAKE_CXX_FLAGS=-D_GLIBCXX_USE_CXX11_ABI=0")
    return()
  endif()
endmacro()
