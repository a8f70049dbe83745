include_guard(GLOBAL)
include(GoogleTest)

# The real traces (../shared/fixtures) are not part of the repository: without
# them the tests that read them skip, saying which folder is missing.
cmake_path(ABSOLUTE_PATH MEMSCOPE_FIXTURES_DIR BASE_DIRECTORY "${PROJECT_SOURCE_DIR}" NORMALIZE
           OUTPUT_VARIABLE MEMSCOPE_FIXTURES_PATH)
if(IS_DIRECTORY "${MEMSCOPE_FIXTURES_PATH}")
  set(MEMSCOPE_FIXTURES_FOUND TRUE)
else()
  set(MEMSCOPE_FIXTURES_FOUND FALSE)
  message(STATUS "Fixtures folder missing: ${MEMSCOPE_FIXTURES_PATH} "
                 "(set MEMSCOPE_FIXTURES_DIR; the tests that read real traces will skip)")
endif()

# memscope_add_fixtures_skip(name): a ctest test that only reports itself
# skipped, standing in for tests that need the missing fixtures folder.
function(memscope_add_fixtures_skip name)
  add_test(NAME ${name}
      COMMAND ${CMAKE_COMMAND} -E echo "fixtures folder missing: ${MEMSCOPE_FIXTURES_PATH}")
  set_tests_properties(${name} PROPERTIES SKIP_REGULAR_EXPRESSION "fixtures folder missing")
endfunction()

# Test code is compiled for build time, not speed: test sources were half of
# the release build's compile time, and at the build type's -O2 most of theirs
# went to code generation (inference_test.cpp: 18.6 s at -O2 -g, 11.0 s at -O0, 12.1 s at -Og).
# The product libraries a test links keep the build type's flags, and so do the
# benchmarks, which measure them. -Og, not -O0: some tests build large traces in
# their own code. Empty to compile tests like the rest.
set(MEMSCOPE_TEST_CODE_FLAGS "-Og" CACHE STRING "Extra compile flags for test code (last -O wins)")

# memscope_test_code(target): marks a target as test code (the flags above).
function(memscope_test_code target)
  target_compile_options(${target} PRIVATE ${MEMSCOPE_TEST_CODE_FLAGS})
endfunction()

# memscope_add_test(NAME n SOURCES ... [LIBS ...] [TIMEOUT s] [LABELS ...])
# One GoogleTest binary linked against the product libraries (never recompiling
# their sources), each test registered with ctest with a default timeout.
function(memscope_add_test)
  cmake_parse_arguments(T "" "NAME;TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  add_executable(${T_NAME} ${T_SOURCES})
  memscope_test_code(${T_NAME})
  # GoogleTest parsed once per binary, not once per source.
  list(LENGTH T_SOURCES _sources)
  if(_sources GREATER 1)
    memscope_precompile(${T_NAME} <gtest/gtest.h> <string> <vector>)
  endif()
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main)
  if(TARGET memscope_test_support)
    target_link_libraries(${T_NAME} PRIVATE memscope_test_support)  # tests/support
  endif()
  target_compile_definitions(${T_NAME} PRIVATE
      MEMSCOPE_FIXTURES_DIR="${MEMSCOPE_FIXTURES_PATH}"
      MEMSCOPE_BINARY_DIR="${PROJECT_BINARY_DIR}")
  gtest_discover_tests(${T_NAME}
      DISCOVERY_TIMEOUT 60
      PROPERTIES TIMEOUT ${T_TIMEOUT} LABELS "${T_LABELS}")
endfunction()
