// Entry points libibverbs.so.1 exports that Debian's libibverbs-dev does not declare in its
// public headers (they live in rdma-core's private driver.h or in headers it no longer ships),
// declared here with rdma-core 44's signatures so vroce's definitions are checked against them.
#pragma once

#include <infiniband/sa.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_sa.h>
#include <rdma/ib_user_verbs.h>

#include <cstddef>
#include <cstdint>

// rdma-core's driver.h: the GID type as the sysfs types file names it.
enum ibv_gid_type_sysfs {
  IBV_GID_TYPE_SYSFS_IB_ROCE_V1,
  IBV_GID_TYPE_SYSFS_ROCE_V2,
};

extern "C" {

// IBVERBS_PRIVATE_34, imported by ibv_devinfo.
int ibv_query_gid_type(struct ibv_context* context, uint8_t port_num, unsigned int index,
                       enum ibv_gid_type_sysfs* type);

// IBVERBS_1.0.
const char* ibv_get_sysfs_path(void);
int ibv_read_sysfs_file(const char* dir, const char* file, char* buf, size_t size);
void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr* dst, struct ib_uverbs_qp_attr* src);
void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec* dst, struct ib_user_path_rec* src);
void ibv_copy_path_rec_to_kern(struct ib_user_path_rec* dst, struct ibv_sa_path_rec* src);

// IBVERBS_1.1.
void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr* dst, struct ib_uverbs_ah_attr* src);
int ibv_dontfork_range(void* base, size_t size);
int ibv_dofork_range(void* base, size_t size);
// The pre-1.1 provider registration, exported as ibv_register_driver@IBVERBS_1.1 only (its init
// function type is long gone from the headers).
void vroce_register_driver_1_1(const char* name, void* init_func);

}  // extern "C"
