# CPack: the Debian packages (cpack --config <build>/CPackConfig.cmake -G DEB, from the release
# build; test/package checks them with dpkg-deb, readelf and lintian):
#   nccl-net-roce          the plugin and vroce under the multiarch library path
#                          (/usr/lib/<triplet>), roce-bench, pcap-icrc-check, the operator
#                          commands (roce-show-gids, roce-diagnose, roce-configure, roce-stats),
#                          the docs, examples and nccl-tests configurations (cmake/InstallLayout);
#   nccl-net-roce-gdr-check  gdr-check, only from a build with the CUDA toolkit. A package of its
#                          own because it links libibverbs (the plugin loads it at run time): in
#                          nccl-net-roce it made that package's Depends gain libibverbs1 on build
#                          hosts that have CUDA and not on the others;
#   nccl-net-roce-default  only the libnccl-net.so link to the plugin, for hosts that want NCCL to
#                          load it when NCCL_NET_PLUGIN is unset. An opt-in on purpose: NCCL loads
#                          a host-wide libnccl-net.so into every job on the host, which collides
#                          with other plugins (HPC-X ships its own libnccl-net.so).
set(CPACK_GENERATOR "DEB")
set(CPACK_PACKAGE_NAME "nccl-net-roce")
set(CPACK_PACKAGE_VENDOR "nccl-net-roce maintainers")
set(ROCE_PACKAGE_MAINTAINER "nccl-net-roce maintainers <maintainers@users.noreply.a-seed-a11d7e22.example>"
    CACHE STRING "The Maintainer field of the Debian packages (Name <address>)")
set(CPACK_PACKAGE_CONTACT "${ROCE_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE "amd64")
set(CPACK_DEBIAN_PACKAGE_SECTION "net")
set(CPACK_DEBIAN_PACKAGE_PRIORITY "optional")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
# The release build keeps full debug info (about 40 MB of the plugin's 48 MB); a container wants
# the code only. Debug with the build tree's unstripped copy.
set(CPACK_STRIP_FILES ON)

set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL plugin default-link)
set(roce_deb_packages nccl-net-roce nccl-net-roce-default)
if(TARGET gdr-check)
  list(APPEND CPACK_COMPONENTS_ALL gdr-check)
  list(APPEND roce_deb_packages nccl-net-roce-gdr-check)
endif()
# Each component's description starts with its own synopsis; an empty summary keeps CPack from
# putting the project's description in front of both.
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "")
set(CPACK_DEBIAN_PLUGIN_PACKAGE_NAME "nccl-net-roce")
set(CPACK_DEBIAN_DEFAULT-LINK_PACKAGE_NAME "nccl-net-roce-default")
set(CPACK_DEBIAN_GDR-CHECK_PACKAGE_NAME "nccl-net-roce-gdr-check")
set(CPACK_COMPONENT_PLUGIN_DESCRIPTION
    "RoCEv2 network plugin for NCCL, with vroce, a userspace RoCEv2 NIC
libnccl-net-roce.so carries NCCL's inter-node traffic over RoCEv2
reliable-connected queue pairs, zero-copy from and into GPU memory, with the
fabric's lossless traffic class enforced on every queue pair. NCCL loads it
with NCCL_NET_PLUGIN=roce (or its full path).
vroce, a userspace RoCEv2 NIC that stands in for libibverbs.so.1, is installed
in a private folder, for tests and demos on machines without an RDMA NIC.
Also: roce-bench, pcap-icrc-check and the operator commands.")
set(CPACK_COMPONENT_DEFAULT-LINK_DESCRIPTION
    "NCCL's default network plugin name for nccl-net-roce
Installs libnccl-net.so as a link to libnccl-net-roce.so, so that NCCL loads
the RoCEv2 plugin when NCCL_NET_PLUGIN is unset. Every NCCL job on the host
then loads it, and another plugin installed as libnccl-net.so on the library
path (HPC-X ships one) collides with it: install this only on hosts dedicated
to nccl-net-roce, and prefer NCCL_NET_PLUGIN=roce otherwise.")
set(CPACK_COMPONENT_GDR-CHECK_DESCRIPTION
    "GPUDirect RDMA check of a node for nccl-net-roce
gdr-check reports which GPUDirect RDMA modes work on a node (GPU memory
registered by pointer, and by dma-buf) and at what bandwidth, with RDMA WRITE
and READ between two local queue pairs and the data checked. It links
libibverbs, so it runs on rdma-core's, or on vroce through LD_LIBRARY_PATH.")

# What the binaries link, computed from the ELF files by dpkg-shlibdeps: libc6, libgcc-s1 and
# libstdc++6 (the tools) for nccl-net-roce, whatever the build host has installed (nothing of it
# links libibverbs: the plugin loads it at run time, so it is only recommended, and an image
# without RDMA packages can still carry the plugin, which then fails init with one clear line);
# the same and libibverbs1 for nccl-net-roce-gdr-check.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PLUGIN_PACKAGE_RECOMMENDS "libibverbs1")
# python3 for the operator command written in Python (roce-stats).
set(CPACK_DEBIAN_PLUGIN_PACKAGE_DEPENDS "python3")
set(CPACK_DEBIAN_DEFAULT-LINK_PACKAGE_DEPENDS "nccl-net-roce (= ${PROJECT_VERSION})")
# The ldconfig trigger Debian asks of a package with a library in the linker's folders, and the
# lintian overrides for what a dlopened plugin in those folders is not (the file says why).
set(CPACK_DEBIAN_PLUGIN_PACKAGE_CONTROL_EXTRA ${PROJECT_SOURCE_DIR}/cmake/debian/triggers)
install(FILES ${PROJECT_SOURCE_DIR}/cmake/debian/lintian-overrides
        DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/lintian/overrides RENAME nccl-net-roce
        COMPONENT plugin)

# Debian's per-package documentation: the copyright file (machine-readable, Apache-2.0) and a
# compressed changelog in /usr/share/doc/<package>/, for every package; and the manual pages of
# the tools and operator commands (man/), compressed.
set(roce_deb_changelog ${PROJECT_BINARY_DIR}/debian/changelog.gz)
set(roce_deb_compressed ${roce_deb_changelog})
add_custom_command(OUTPUT ${roce_deb_changelog}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/debian
  COMMAND gzip -9n -c ${PROJECT_SOURCE_DIR}/cmake/debian/changelog > ${roce_deb_changelog}
  DEPENDS ${PROJECT_SOURCE_DIR}/cmake/debian/changelog
  COMMENT "Compressing the Debian changelog")
set(roce_man_tools roce-bench pcap-icrc-check ${ROCE_OPERATOR_MAN_PAGES})
if(TARGET gdr-check)
  list(APPEND roce_man_tools gdr-check)
endif()
foreach(tool IN LISTS roce_man_tools)
  set(component plugin)
  if(tool STREQUAL "gdr-check")
    set(component gdr-check)
  endif()
  set(page ${PROJECT_BINARY_DIR}/man/${tool}.1.gz)
  add_custom_command(OUTPUT ${page}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/man
    COMMAND gzip -9n -c ${PROJECT_SOURCE_DIR}/man/${tool}.1 > ${page}
    DEPENDS ${PROJECT_SOURCE_DIR}/man/${tool}.1
    COMMENT "Compressing the manual page of ${tool}")
  install(FILES ${page} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT ${component})
  list(APPEND roce_deb_compressed ${page})
endforeach()
add_custom_target(roce_deb_docs ALL DEPENDS ${roce_deb_compressed})
foreach(component package IN ZIP_LISTS CPACK_COMPONENTS_ALL roce_deb_packages)
  set(exclude "")
  if(component STREQUAL "default-link")
    set(exclude EXCLUDE_FROM_ALL)
  endif()
  install(FILES ${PROJECT_SOURCE_DIR}/cmake/debian/copyright ${roce_deb_changelog}
          DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${package} COMPONENT ${component} ${exclude})
endforeach()
include(CPack)
