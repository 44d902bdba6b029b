# roce_catch_tests(<target> LABELS <label;label...> [SPEC <Catch2 test spec>] [PREFIX <prefix>]
#                  [TIMEOUT <seconds>] [SKIP_RETURN_CODE <code>])
#
# Registers the Catch2 cases of <target> (those SPEC selects; all when it is absent) as CTest
# tests named <prefix><case name>, with every label given. catch_discover_tests writes its
# PROPERTIES into the generated script unquoted, so a list value ("LABELS unit;sanitize") would
# arrive as LABELS unit plus a stray "sanitize" and the second label would be lost; the labels
# are therefore set by a CTest include file of this call's own, which ctest reads after the
# discovered tests. Call it once per selection: each call names its own test list.
#
# The target joins the suite target of each suite label (cmake/TestSuites.cmake). Where it is not
# built, as in a tree built only for one suite, a stand-in test with the same labels takes the
# place of its cases and fails ("Could not find executable"), so that `ctest -L <label>` never runs
# fewer tests quietly.
function(roce_catch_tests target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "SPEC;PREFIX;TIMEOUT;SKIP_RETURN_CODE" "LABELS")
  if(NOT arg_LABELS)
    message(FATAL_ERROR "roce_catch_tests(${target}): LABELS is required")
  endif()
  string(MAKE_C_IDENTIFIER "roce_catch_${target}_${arg_SPEC}" test_list)
  set(discover_args TEST_LIST ${test_list})
  if(arg_SPEC)
    list(APPEND discover_args TEST_SPEC "${arg_SPEC}")
  endif()
  if(arg_PREFIX)
    list(APPEND discover_args TEST_PREFIX "${arg_PREFIX}")
  endif()
  set(properties "")
  if(arg_TIMEOUT)
    list(APPEND properties TIMEOUT ${arg_TIMEOUT})
  endif()
  if(arg_SKIP_RETURN_CODE)
    list(APPEND properties SKIP_RETURN_CODE ${arg_SKIP_RETURN_CODE})
  endif()
  if(properties)
    list(APPEND discover_args PROPERTIES ${properties})
  endif()
  catch_discover_tests(${target} ${discover_args})

  # The discovered list is defined, maybe empty, once the target is built.
  set(labels_file ${CMAKE_CURRENT_BINARY_DIR}/${test_list}_labels.cmake)
  file(WRITE ${labels_file}
       "if(${test_list})\n"
       "  set_tests_properties(\${${test_list}} PROPERTIES LABELS \"${arg_LABELS}\")\n"
       "elseif(NOT DEFINED ${test_list})\n"
       "  add_test(${test_list}_NOT_BUILT ${target}_NOT_BUILT)\n"
       "  set_tests_properties(${test_list}_NOT_BUILT PROPERTIES LABELS \"${arg_LABELS}\")\n"
       "endif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${labels_file})
  roce_suite_add("${arg_LABELS}" ${target})
endfunction()
