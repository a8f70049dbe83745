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
