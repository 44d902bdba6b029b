/* What a network plugin hands NCCL's profiler callback (NCCL 2.26+, ncclNet v10 and v11): the
 * event types of the callback and the IB transport's version-1 event descriptor, whose layout
 * NCCL's profiler plugins decode (pluginId = NCCL_PROFILER_NET_TYPE_IB | version). Facts from
 * NCCL's profiler ABI headers; this plugin is a verbs transport, so it reports IB events. */
#ifndef NCCL_NET_PROFILER_NET_H_
#define NCCL_NET_PROFILER_NET_H_

#include <stddef.h>
#include <stdint.h>

/* The profiler callback's `type` argument. */
enum {
  ncclProfilerNetEventStart = 0,
  ncclProfilerNetEventStop = 1,
  ncclProfilerNetEventUpdate = 2,
  ncclProfilerNetEventUpdateAndStop = 3,
};

/* The upper 16 bits of pluginId name the transport, the lower 16 its descriptor version. */
#define NCCL_PROFILER_NET_VER_BITS (16)
#define NCCL_PROFILER_NET_TYPE_IB (1U << NCCL_PROFILER_NET_VER_BITS)
#define NCCL_PROFILER_NET_IB_VER 1

/* ncclProfilerNetIbDescr_v1_t's event type. */
enum { ncclProfileQp = (1 << 0) };

/* The QP event's fields. Named outside the union (NCCL declares it inline, the same layout)
 * because C++ does not allow a type to be declared inside an anonymous union. */
typedef struct {
  int device;     /* network device index */
  uint64_t wr_id; /* work request id */
  int opcode;     /* ibv_wr_opcode of a send; unset for a receive */
  int qpNum;      /* QP number */
  size_t length;  /* bytes of the work request */
} ncclProfilerNetIbQpDescr_v1_t;

typedef struct {
  uint8_t type; /* ncclProfileQp */
  union {
    ncclProfilerNetIbQpDescr_v1_t qp;
  };
} ncclProfilerNetIbDescr_v1_t;

#endif
