/* A deliberate direct libibverbs call: the control that shows check_no_verbs_imports.cmake
 * detects one (its test is expected to fail on this object). Never linked into anything. */
#include <infiniband/verbs.h>

int roce_verbs_import_canary(void);
int roce_verbs_import_canary(void) {
  int n = 0;
  struct ibv_device** list = ibv_get_device_list(&n);
  return list != 0 ? n : -1;
}
