// Port attributes through the extended op, with the compat symbol as fallback: see port_query.h.
#include "ibv/port_query.h"

#include <cerrno>

namespace roce::ibv {
namespace {

// verbs_get_ctx_op() without the GNU statement expression the header uses.
verbs_context* extended_query_port(ibv_context* context) noexcept {
  verbs_context* vctx = verbs_get_ctx(context);
  if (vctx == nullptr || vctx->sz < sizeof(verbs_context) - offsetof(verbs_context, query_port) ||
      vctx->query_port == nullptr) {
    return nullptr;
  }
  return vctx;
}

int as_errno(int rc) noexcept {
  if (rc >= 0) {
    return rc;
  }
  return errno != 0 ? errno : EIO;
}

}  // namespace

int query_port(const Library& lib, ibv_context* context, uint8_t port_num,
               PortAttributes* out) noexcept {
  *out = {};
  if (verbs_context* vctx = extended_query_port(context)) {
    // rdma-core zeroes a larger buffer and fills what it knows, so asking for the rdma-core 50
    // layout is safe on older libraries; an implementation that insists on its exact size gets
    // a second chance with the 44 layout before we drop to the compat symbol.
    errno = 0;
    int rc = as_errno(vctx->query_port(context, port_num, &out->attr, sizeof(PortAttributes)));
    if (rc == 0) {
      return 0;
    }
    *out = {};
    errno = 0;
    rc = as_errno(vctx->query_port(context, port_num, &out->attr, sizeof(ibv_port_attr)));
    if (rc == 0) {
      return 0;
    }
    *out = {};
  }
  errno = 0;
  // The compat symbol writes only the first 48 bytes; the rest stays zero from above.
  return as_errno(lib.fn().query_port_compat(context, port_num,
                                             reinterpret_cast<_compat_ibv_port_attr*>(&out->attr)));
}

}  // namespace roce::ibv
