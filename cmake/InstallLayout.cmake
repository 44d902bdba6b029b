# What `cmake --install` and the nccl-net-roce package put where, besides the binaries (each
# target installs itself) and Debian's per-package files (cmake/Packaging.cmake):
#   <docdir> (share/doc/nccl-net-roce)       README.md and docs/ (the licence is the copyright
#                                             file beside them), and under examples/ (where
#                                             Debian wants executable documentation):
#     examples/                               the torchrun all-reduce examples,
#     examples/nccl-tests-config/             the nccl-tests scenarios and their runner;
#   <datadir>/nccl-net-roce/scripts          the operator scripts with lib/roce_common.sh, which
#                                             they source from beside themselves;
#   <bindir>                                  one command per operator script, on PATH under a
#                                             roce- name that rdma-core and MLNX_OFED do not use
#                                             (OFED ships a show_gids of its own), with a manual
#                                             page each (man/).
# The developer scripts (demo.sh, test.sh, install-deps.sh, the benchmark and callgrind helpers)
# work on a source checkout and its build trees, so they stay there.
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT plugin)
install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT plugin)
install(DIRECTORY examples/ nccl-tests-config DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples
        COMPONENT plugin USE_SOURCE_PERMISSIONS)

# command on PATH -> the script it runs
set(ROCE_OPERATOR_COMMANDS
    roce-show-gids roce-show-gids
    roce-diagnose diagnose_roce.sh
    roce-configure configure_roce.sh
    roce-stats roce_stats)
set(roce_scripts_dest ${CMAKE_INSTALL_DATADIR}/nccl-net-roce/scripts)
# The shell library only: paired_rounds.py serves the benchmark scripts, which are not installed,
# and the test suite leaves a __pycache__ folder beside it that FILES_MATCHING alone would ship
# empty (lintian: package-installs-python-pycache-dir).
install(DIRECTORY scripts/lib DESTINATION ${roce_scripts_dest} COMPONENT plugin
        FILES_MATCHING PATTERN "*.sh" PATTERN "__pycache__" EXCLUDE)
# Each command is a two-line sh wrapper that execs the script where it lies, found relative to
# the wrapper, so the scripts find their library (and diagnose_roce.sh the installed roce-bench)
# under any prefix; a symbolic link would make them look beside the link, in <bindir>.
file(RELATIVE_PATH roce_bin_to_scripts ${CMAKE_INSTALL_FULL_BINDIR}
     ${CMAKE_INSTALL_FULL_DATADIR}/nccl-net-roce/scripts)
set(ROCE_OPERATOR_MAN_PAGES "")
while(ROCE_OPERATOR_COMMANDS)
  list(POP_FRONT ROCE_OPERATOR_COMMANDS command script)
  install(PROGRAMS scripts/${script} DESTINATION ${roce_scripts_dest} COMPONENT plugin)
  set(wrapper ${PROJECT_BINARY_DIR}/operator-commands/${command})
  file(CONFIGURE OUTPUT ${wrapper} @ONLY CONTENT [[#!/bin/sh
# @command@: runs nccl-net-roce's operator script @script@ from
# @roce_bin_to_scripts@ (relative to this file), beside the library it
# sources. See @command@(1).
exec "$(dirname "$(readlink -f "$0")")/@roce_bin_to_scripts@/@script@" "$@"
]])
  install(PROGRAMS ${wrapper} DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT plugin)
  list(APPEND ROCE_OPERATOR_MAN_PAGES ${command})
endwhile()
