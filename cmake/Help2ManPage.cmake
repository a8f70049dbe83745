# Writes one man page from a program's --help (cmake -P; see resources/man):
#   -DHELP2MAN -DGZIP -DSEARCH_PATH -DPROGRAM -DDESCRIPTION -DVERSION -DINCLUDE -DOUTPUT
# The program is run by name with SEARCH_PATH first on PATH, offscreen (the GUI
# parses its options after Qt starts), and the page is gzipped as Debian ships
# man pages.
set(ENV{PATH} "${SEARCH_PATH}:$ENV{PATH}")
set(ENV{QT_QPA_PLATFORM} offscreen)
# DESCRIPTION "-": the first line of the program's help, which for a
# memscope-cli subcommand is the one-line description the CLI lists.
if(DESCRIPTION STREQUAL "-")
  execute_process(COMMAND ${PROGRAM} --help OUTPUT_VARIABLE help ERROR_QUIET)
  string(REGEX MATCH "^[^\n]*" DESCRIPTION "${help}")
  if(DESCRIPTION STREQUAL "" OR DESCRIPTION MATCHES "^Usage")
    message(FATAL_ERROR "${PROGRAM} --help starts with no description line")
  endif()
endif()
execute_process(
    COMMAND ${HELP2MAN} --no-info --section=1 --source=memscope
            "--manual=memscope manual" --version-string=${VERSION} "--name=${DESCRIPTION}"
            --include=${INCLUDE} --output=${OUTPUT} ${PROGRAM}
    RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "help2man failed on ${PROGRAM}: ${err}")
endif()
# A program whose --help printed nothing would give a page without options.
file(READ ${OUTPUT} page)
if(NOT page MATCHES "\n\\.SH DESCRIPTION")
  message(FATAL_ERROR "help2man made no DESCRIPTION for ${PROGRAM}; does `${PROGRAM} --help` print its usage?")
endif()
execute_process(COMMAND ${GZIP} -9nf ${OUTPUT} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "gzip failed on ${OUTPUT}")
endif()
