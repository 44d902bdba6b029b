# Suite targets: <label>_suite (sanitize_suite, fuzz_suite, tidy_suite) builds what the tests of
# that label run, and nothing else. scripts/test.sh builds only these in the sanitizer trees,
# which run only those labels (asan-ubsan: sanitize, fuzz and tidy; tsan: sanitize): the tools,
# benchmarks and the tests of other labels compiled with sanitizers would be built for nothing.
#
# A Catch2 executable joins the suites of its labels through roce_catch_tests(). A test registered
# with add_test() names what it runs with roce_test_needs(), after its labels are set. Nothing is
# skipped quietly when one is forgotten: a Catch2 executable that is not built stands in as a
# failing test with its labels (cmake/CatchTests.cmake), ctest fails a test whose executable is
# missing, and scripts/suite-built-check.py fails a tree in which a labelled test names a file of
# the build tree that was not built.
set(ROCE_SUITE_LABELS sanitize fuzz tidy)

# Adds <target>... to the suite of every suite label among <labels>.
function(roce_suite_add labels)
  foreach(label IN LISTS labels)
    if(label IN_LIST ROCE_SUITE_LABELS)
      set_property(GLOBAL APPEND PROPERTY ROCE_SUITE_${label}_TARGETS ${ARGN})
    endif()
  endforeach()
endfunction()

# roce_test_needs(<test>... TARGETS [<target>...])
#
# Declares the targets that the tests run or load (their executable, programs and libraries named
# on their command line or in their environment); TARGETS may be empty for a test that runs only
# what the configure step wrote. The tests' labels must be set first: they choose the suites.
function(roce_test_needs)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "" "TARGETS")
  if(NOT arg_UNPARSED_ARGUMENTS OR NOT "TARGETS" IN_LIST ARGV)
    message(FATAL_ERROR "roce_test_needs(<test>... TARGETS [<target>...]): got '${ARGV}'")
  endif()
  foreach(test IN LISTS arg_UNPARSED_ARGUMENTS)
    get_test_property(${test} LABELS labels)
    set(suite_labels ${labels})
    list(FILTER suite_labels INCLUDE REGEX "^(${ROCE_SUITE_LABELS_REGEX})$")
    if(NOT suite_labels)
      message(FATAL_ERROR "roce_test_needs(${test}): its labels (${labels}) name no suite "
                          "(${ROCE_SUITE_LABELS}); set its LABELS before this call")
    endif()
    roce_suite_add("${suite_labels}" ${arg_TARGETS})
  endforeach()
endfunction()
list(JOIN ROCE_SUITE_LABELS "|" ROCE_SUITE_LABELS_REGEX)

# Defines the suite targets; called once, after every test is registered.
function(roce_add_suite_targets)
  foreach(label IN LISTS ROCE_SUITE_LABELS)
    get_property(targets GLOBAL PROPERTY ROCE_SUITE_${label}_TARGETS)
    list(REMOVE_DUPLICATES targets)
    add_custom_target(${label}_suite)
    if(targets)
      add_dependencies(${label}_suite ${targets})
    endif()
  endforeach()
endfunction()
