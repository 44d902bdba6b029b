# ROCE_SANITIZE applies one sanitizer set to every target of the build tree.
# The CMake presets asan-ubsan and tsan select it; scripts/test.sh builds both.
if(ROCE_SANITIZE)
  string(REPLACE ";" "," _roce_sanitizers "${ROCE_SANITIZE}")
  message(STATUS "Sanitizers: ${_roce_sanitizers}")
  add_compile_options(-fsanitize=${_roce_sanitizers} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${_roce_sanitizers})
  set(ROCE_SANITIZED ON)
else()
  set(ROCE_SANITIZED OFF)
endif()
