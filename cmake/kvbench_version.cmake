# Writes the version header (src/kvbench_version.hpp.in) with the git sha and dirty flag of the
# source tree. Runs at every build (a custom target), so a commit or an edit after configuring
# still shows; configure_file leaves the header untouched when nothing changed, so nothing
# recompiles needlessly. Inputs: -DSRC= -DIN= -DOUT= -DPROJECT_VERSION=
execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY ${SRC}
                OUTPUT_VARIABLE KVBENCH_GIT_SHA OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
                RESULT_VARIABLE sha_rc)
if(NOT sha_rc EQUAL 0 OR NOT KVBENCH_GIT_SHA)
  set(KVBENCH_GIT_SHA unknown)
endif()
# Tracked files that differ from HEAD (untracked files do not count: build outputs, scratch).
execute_process(COMMAND git status --porcelain --untracked-files=no WORKING_DIRECTORY ${SRC}
                OUTPUT_VARIABLE status OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
                RESULT_VARIABLE status_rc)
if(status_rc EQUAL 0 AND status STREQUAL "")
  set(KVBENCH_GIT_DIRTY false)
else()
  set(KVBENCH_GIT_DIRTY true)
endif()
configure_file(${IN} ${OUT} @ONLY)
