# Fails when any of FILES (archives or objects, ';'-separated) has an undefined reference to a
# libibverbs symbol (ibv_*, _ibv_*, __ibv_*, verbs_*): the plugin must reach libibverbs only
# through dlopen/dlvsym (plugin/ibv/library.h), never through the dynamic linker.
# Usage: cmake -DNM=<nm> -DFILES=<a;b> -P check_no_verbs_imports.cmake
if(NOT NM OR NOT FILES)
  message(FATAL_ERROR "usage: cmake -DNM=<nm> -DFILES=<archive-or-objects> -P ${CMAKE_CURRENT_LIST_FILE}")
endif()
set(offenders "")
foreach(file IN LISTS FILES)
  execute_process(COMMAND ${NM} -u --format=posix ${file}
                  OUTPUT_VARIABLE listing RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${NM} failed on ${file}: ${err}")
  endif()
  string(REPLACE "\n" ";" lines "${listing}")
  set(object "${file}")
  foreach(line IN LISTS lines)
    if(line MATCHES "^(.*\\[.*\\]):$")
      set(object "${CMAKE_MATCH_1}")
    elseif(line MATCHES "^(_*ibv_[A-Za-z0-9_]*|_*verbs_[A-Za-z0-9_]*)(@[^ ]*)? [Uw]")
      list(APPEND offenders "${object}: ${CMAKE_MATCH_1}")
    endif()
  endforeach()
endforeach()
if(offenders)
  list(JOIN offenders "\n  " text)
  message(FATAL_ERROR "direct libibverbs references (use ibv::Library's entry points instead):\n  ${text}")
endif()
message(STATUS "no direct libibverbs references in ${FILES}")
