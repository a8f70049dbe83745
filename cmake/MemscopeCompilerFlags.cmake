# Warnings on everywhere; new warnings are bugs.
add_compile_options(-Wall -Wextra -Wpedantic -Wno-unused-parameter)
# The presets turn warnings into errors (Debian 12's g++ 12 builds warning-free);
# a build with another compiler can leave it off.
option(MEMSCOPE_WERROR "Treat compiler warnings as errors" OFF)
if(MEMSCOPE_WERROR)
  add_compile_options(-Werror)
endif()
if(MEMSCOPE_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()

# Reports why a component was skipped, once, in the feature summary and the log.
function(memscope_skip component reason)
  message(STATUS "memscope: skipping ${component}: ${reason}")
  set(MEMSCOPE_SKIPPED_${component} "${reason}" CACHE INTERNAL "")
endfunction()

# memscope_precompile(target header...): the headers most of the target's
# sources parse (Qt and QCustomPlot, CLI11, GoogleTest), parsed once
# into a precompiled header that every source of the target then loads. On 2
# cores the clean build was 25 minutes, and a GUI source spent four fifths of
# its compile time parsing headers. Off for compilers or tools that do not
# take them (clang-tidy, include-what-you-use).
option(MEMSCOPE_PRECOMPILED_HEADERS "Precompile the heaviest common headers per target" ON)
function(memscope_precompile target)
  if(MEMSCOPE_PRECOMPILED_HEADERS)
    target_precompile_headers(${target} PRIVATE ${ARGN})
  endif()
endfunction()
