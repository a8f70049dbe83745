# Runs `memscope-cli convert IN OUT` and checks its exit status is WANT
# (ctest's WILL_FAIL cannot tell exit status 1 from 2).
execute_process(COMMAND ${CLI} convert ${IN} ${OUT} RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL WANT)
  message(FATAL_ERROR "convert exited ${rc}, expected ${WANT}: ${err}")
endif()
if(WANT EQUAL 0 AND NOT EXISTS ${OUT})
  message(FATAL_ERROR "convert wrote no ${OUT}")
endif()
message(STATUS "${err}")
