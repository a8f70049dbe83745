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

# memscope_add_test(NAME n SOURCES ... [LIBS ...] [TIMEOUT s] [LABELS ...])
# One GoogleTest binary linked against the product libraries (never recompiling
# their sources), each test registered with ctest with a default timeout.
function(memscope_add_test)
  cmake_parse_arguments(T "" "NAME;TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main)
  target_compile_definitions(${T_NAME} PRIVATE
      MEMSCOPE_FIXTURES_DIR="${MEMSCOPE_FIXTURES_PATH}"
      MEMSCOPE_BINARY_DIR="${PROJECT_BINARY_DIR}")
  gtest_discover_tests(${T_NAME}
      DISCOVERY_TIMEOUT 60
      PROPERTIES TIMEOUT ${T_TIMEOUT} LABELS "${T_LABELS}")
endfunction()
