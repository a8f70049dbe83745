include_guard(GLOBAL)
# core's stages (docs/ARCHITECTURE.md). Each stage is an object library with its
# own public include folder (include/memscope/<stage>/) and private headers
# beside its sources (src/). A stage links, and so sees the headers of, only the
# stages it names in DEPENDS and PRIVATE_DEPENDS: a file that includes a header
# of any other stage fails to compile. libmemscope_core is all the stages' objects in one shared
# library, the one that plugins and front ends link.
#
# DEPENDS are the stages its public headers include (linked PUBLIC: whoever
# includes this stage's headers needs theirs); PRIVATE_DEPENDS those only its
# sources include (linked PRIVATE). Both list every stage the stage includes,
# the indirect ones too: the link would let an undeclared one through, so
# scripts/check_stage_includes.py, run as a test, holds each file to its
# stage's lists (the test memscope_stage_includes, tests/layout), and a public
# header to DEPENDS alone.

# memscope_core_stage(NAME stage [DEPENDS stage...] [PRIVATE_DEPENDS stage...]
#                     SOURCES file...)
function(memscope_core_stage)
  cmake_parse_arguments(S "" "NAME" "DEPENDS;PRIVATE_DEPENDS;SOURCES" ${ARGN})
  get_property(known GLOBAL PROPERTY MEMSCOPE_CORE_STAGES)
  foreach(dep IN LISTS S_DEPENDS S_PRIVATE_DEPENDS)
    if(NOT dep IN_LIST known)
      # Stages are added bottom up, so a stage can only name one already added:
      # the order in core/CMakeLists.txt is the pipeline's, and no cycle exists.
      message(FATAL_ERROR "core stage ${S_NAME} depends on '${dep}', which is not a stage below it")
    endif()
  endforeach()
  set(target memscope_${S_NAME})
  add_library(${target} OBJECT ${S_SOURCES})
  target_include_directories(${target} PUBLIC
      $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>)
  foreach(dep IN LISTS S_DEPENDS)
    target_link_libraries(${target} PUBLIC memscope_${dep})
  endforeach()
  foreach(dep IN LISTS S_PRIVATE_DEPENDS)
    target_link_libraries(${target} PRIVATE memscope_${dep})
  endforeach()
  # Compiled into a shared library.
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  set_property(GLOBAL APPEND PROPERTY MEMSCOPE_CORE_STAGES ${S_NAME})
  # "stage: public deps | private deps", read by the include-direction check.
  list(JOIN S_DEPENDS " " deps_text)
  list(JOIN S_PRIVATE_DEPENDS " " private_text)
  set_property(GLOBAL APPEND PROPERTY MEMSCOPE_CORE_STAGE_LINES "${S_NAME}: ${deps_text} | ${private_text}")
endfunction()
