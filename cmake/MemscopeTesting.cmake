include(GoogleTest)

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
      MEMSCOPE_FIXTURES_DIR="${MEMSCOPE_FIXTURES_DIR}"
      MEMSCOPE_BINARY_DIR="${PROJECT_BINARY_DIR}")
  gtest_discover_tests(${T_NAME}
      DISCOVERY_TIMEOUT 60
      PROPERTIES TIMEOUT ${T_TIMEOUT} LABELS "${T_LABELS}")
endfunction()
