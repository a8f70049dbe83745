# The Debian package (cpack -G DEB, or scripts/package.sh): everything this
# build installs, under /usr. Depends is computed from the binaries by
# dpkg-shlibdeps, never written by hand; the description says which of the
# optional components the build had, since a machine without CUDA or LibTorch
# leaves them out.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME memscope)
set(CPACK_PACKAGE_VENDOR "memscope developers")
set(CPACK_PACKAGE_CONTACT "memscope developers <dev@memscope.invalid>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # memscope_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# libmemscope_core.so is ours, in the package itself; CUPTI comes with the
# CUDA toolkit, which no Debian package provides (the tracer is loaded into a
# CUDA process that has it).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${CMAKE_LIBRARY_OUTPUT_DIRECTORY})
# `record` starts Python jobs through its startup hook.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS python3)
set(CPACK_DEBIAN_COMPRESSION_TYPE gzip)

set(_contents "")
macro(_memscope_package_part target text)
  if(TARGET ${target})
    string(APPEND _contents "  * ${text}\n")
  endif()
endmacro()
_memscope_package_part(memscope "memscope: the Qt 6 GUI")
_memscope_package_part(memscope-cli "memscope-cli: summary, compare, check, convert, record, whatif, digest, stacks, leaks, attach, detach, top")
_memscope_package_part(memscope-train "memscope-train: the LibTorch reference trainer")
_memscope_package_part(memscope_cupti "libmemscope_cupti.so: the CUPTI allocation tracer (needs CUDA)")
_memscope_package_part(memscope_torch_capture
                       "libmemscope_torch_capture.so and the Python hook: records PyTorch CPU jobs")
_memscope_package_part(memscope_man "man pages")
set(_left_out "")
foreach(pair "memscope;the GUI" "memscope-train;the reference trainer"
             "memscope_cupti;the CUDA tracer" "memscope_torch_capture;the PyTorch CPU capture")
  list(GET pair 0 _target)
  list(GET pair 1 _name)
  if(NOT TARGET ${_target})
    list(APPEND _left_out "${_name}")
  endif()
endforeach()
if(_left_out)
  list(JOIN _left_out ", " _left_out)
  string(APPEND _contents "  Not built into this package: ${_left_out}.\n")
endif()
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "${PROJECT_DESCRIPTION}\n"
    "memscope records the memory timeline of a training process, opens PyTorch\n"
    "memory snapshots and profiler traces, and compares activation-checkpointing\n"
    "policies side by side, measured or predicted from one run.\n"
    "This package contains:\n${_contents}")
string(REPLACE ";" "" CPACK_DEBIAN_PACKAGE_DESCRIPTION "${CPACK_DEBIAN_PACKAGE_DESCRIPTION}")
string(STRIP "${CPACK_DEBIAN_PACKAGE_DESCRIPTION}" CPACK_DEBIAN_PACKAGE_DESCRIPTION)
include(CPack)
