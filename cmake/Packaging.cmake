# CPack: one .deb holding the plugin, its libnccl-net.so link, the operator scripts and the docs,
# so an operator can drop the plugin into a container with one file.
set(CPACK_GENERATOR "DEB")
set(CPACK_PACKAGE_NAME "nccl-net-roce")
set(CPACK_PACKAGE_VENDOR "nccl-net-roce maintainers")
set(CPACK_PACKAGE_CONTACT "nccl-net-roce maintainers")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE "amd64")
set(CPACK_DEBIAN_PACKAGE_SECTION "libs")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
# The plugin dlopens libibverbs at run time; recommend rather than depend, so images without RDMA
# packages can still carry it (the plugin then fails init with one clear line).
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libibverbs1")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS OFF)
set(CPACK_DEB_COMPONENT_INSTALL OFF)
set(CPACK_COMPONENTS_ALL plugin)
# The release build keeps full debug info (about 40 MB of the plugin's 48 MB); a container wants
# the code only. Debug with the build tree's unstripped copy.
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6 (>= 2.34)")
include(CPack)
