# Read by ctest after the discovered Catch2 cases: gives each case the labels unit and sanitize.
# (catch_discover_tests writes PROPERTIES into its generated script unquoted, so a list value
# such as "unit;sanitize" arrives as LABELS unit plus a stray "sanitize": the label is lost.)
foreach(roce_bench_case IN LISTS roce_bench_unit_cases)
  set_tests_properties("${roce_bench_case}" PROPERTIES LABELS "unit;sanitize")
endforeach()
