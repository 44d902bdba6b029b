/* Loads libnccl-net-roce.so the way NCCL does (dlopen RTLD_NOW|RTLD_LOCAL, dlsym of each table),
 * from C, so nothing C++ leaks into the check, and verifies what NCCL relies on before it calls
 * anything: every table is there and named "RoCE", every entry NCCL calls unchecked is set,
 * v11 and v12 have finalize, and the argument checks answer without touching a device (through
 * v6 and v7's own int-sized regMr and v12's 8-member makeVDevice too).
 *
 * Usage: dlopen_tables <path to libnccl-net-roce.so>          table and argument checks
 *        dlopen_tables <path> --init-fails [TEXT]             init must fail (bad environment)
 *                                                             with exactly one WARN line, which
 *                                                             contains TEXT when given
 *
 * After the failed init, a v11 listen with a context init never returned makes the plugin throw
 * (std::invalid_argument) and its ABI guard catch: a WARN carrying the exception's message proves
 * that the plugin's unwinder (libgcc_s, see compat/CMakeLists.txt) and its static libstdc++ work
 * together in a dlopened plugin; a broken unwinder would end in std::terminate instead. (Setup
 * failures such as the loader's are Result values, not exceptions: docs/design.md, "Errors".) */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "nccl_net/nccl_net.h"

static int failures = 0;
static int warn_lines = 0;
static char last_warn[2048];

#define CHECK(cond)                                                     \
  do {                                                                  \
    if (!(cond)) {                                                      \
      fprintf(stderr, "FAILED %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                       \
    }                                                                   \
  } while (0)

static void logger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
                   const char* fmt, ...) {
  char text[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  if (level == NCCL_LOG_WARN) {
    ++warn_lines;
    snprintf(last_warn, sizeof last_warn, "%s", text);
  }
  fprintf(stderr, "[plugin level %d flags 0x%lx %s:%d] %s\n", (int)level, flags, file, line, text);
}

static void check_common_entries(const char* version, const void* const* entries, int count) {
  for (int i = 0; i < count; ++i) {
    if (entries[i] == NULL) {
      fprintf(stderr, "FAILED: %s entry %d is NULL\n", version, i);
      ++failures;
    }
  }
}

/* Argument checks reachable without init: they must answer ncclInvalidArgument (or success for
 * finalize(NULL)), overwrite out-parameters, and never touch the (fake) comm. */
static void check_arguments(const ncclNet_v6_t* v6, const ncclNet_v8_t* v8, const ncclNet_v9_t* v9,
                            const ncclNet_v11_t* v11, const ncclNet_v12_t* v12) {
  long fake_comm = 0;
  void* request = (void*)0x1; /* NCCL's "optional receive completion" hint */
  int data = 0;
  void* datas[9] = {&data, &data, &data, &data, &data, &data, &data, &data, &data};
  int sizes[9] = {4, 4, 4, 4, 4, 4, 4, 4, 4};
  size_t wide_sizes[9] = {4, 4, 4, 4, 4, 4, 4, 4, 4};
  int tags[9] = {0};
  void* mhandles[9] = {&data, &data, &data, &data, &data, &data, &data, &data, &data};

  CHECK(v8->isend(NULL, &data, 4, 0, &data, &request) == ncclInvalidArgument);
  CHECK(request == NULL);
  request = (void*)0x1;
  CHECK(v8->isend(&fake_comm, &data, -1, 0, &data, &request) == ncclInvalidArgument);
  CHECK(request == NULL);
  request = (void*)0x1;
  CHECK(v9->isend(&fake_comm, &data, ((size_t)1 << 30) + 1, 0, &data, &request) ==
        ncclInvalidArgument);
  CHECK(request == NULL);
  CHECK(v8->isend(&fake_comm, NULL, 4, 0, &data, &request) == ncclInvalidArgument);

  request = (void*)0x1;
  CHECK(v8->irecv(&fake_comm, 0, datas, sizes, tags, mhandles, &request) == ncclInvalidArgument);
  CHECK(request == NULL);
  request = (void*)0x1;
  CHECK(v8->irecv(&fake_comm, 9, datas, sizes, tags, mhandles, &request) == ncclInvalidArgument);
  CHECK(request == NULL);
  sizes[2] = -5;
  CHECK(v8->irecv(&fake_comm, 3, datas, sizes, tags, mhandles, &request) == ncclInvalidArgument);
  sizes[2] = 4;
  wide_sizes[1] = ((size_t)1 << 31);
  CHECK(v9->irecv(&fake_comm, 2, datas, wide_sizes, tags, mhandles, &request) ==
        ncclInvalidArgument);
  CHECK(v8->irecv(&fake_comm, 1, datas, sizes, NULL, mhandles, &request) == ncclInvalidArgument);
  CHECK(v8->irecv(&fake_comm, 1, datas, sizes, tags, mhandles, NULL) == ncclInvalidArgument);

  CHECK(v8->iflush(&fake_comm, 0, datas, sizes, mhandles, &request) == ncclInvalidArgument);
  CHECK(v8->test(NULL, &data, NULL) == ncclInvalidArgument);
  CHECK(v8->test(&fake_comm, NULL, NULL) == ncclInvalidArgument);

  void* mhandle = (void*)0x1;
  CHECK(v8->regMr(&fake_comm, &data, 4, 7, &mhandle) == ncclInvalidArgument);
  CHECK(mhandle == NULL);
  CHECK(v8->regMr(NULL, &data, 4, NCCL_PTR_HOST, &mhandle) == ncclInvalidArgument);
  CHECK(v8->regMrDmaBuf(&fake_comm, &data, 4, NCCL_PTR_CUDA, 0, -1, &mhandle) ==
        ncclInvalidArgument);
  CHECK(v8->deregMr(&fake_comm, NULL) == ncclInvalidArgument);
  mhandle = (void*)0x1;
  CHECK(v6->regMr(&fake_comm, &data, -4, NCCL_PTR_HOST, &mhandle) == ncclInvalidArgument);
  CHECK(mhandle == NULL);
  CHECK(v6->regMr(NULL, &data, 4, NCCL_PTR_HOST, &mhandle) == ncclInvalidArgument);
  void* v6_comm = (void*)0x1;
  CHECK(v6->connect(0, NULL, &v6_comm) == ncclInvalidArgument);
  CHECK(v6_comm == NULL);
  CHECK(v6->accept(NULL, &v6_comm) == ncclInvalidArgument);
  CHECK(v6->getProperties(0, NULL) == ncclInvalidArgument);

  void* dptr = (void*)0x1;
  CHECK(v8->getDeviceMr(NULL, &data, &dptr) == ncclInvalidArgument);
  CHECK(v8->closeSend(NULL) == ncclInvalidArgument);
  CHECK(v8->closeRecv(NULL) == ncclInvalidArgument);
  CHECK(v8->closeListen(NULL) == ncclInvalidArgument);
  CHECK(v8->devices(NULL) == ncclInvalidArgument);
  CHECK(v8->getProperties(0, NULL) == ncclInvalidArgument);

  void* comm = (void*)0x1;
  CHECK(v8->listen(0, NULL, &comm) == ncclInvalidArgument);
  CHECK(v8->connect(0, NULL, &comm, NULL) == ncclInvalidArgument);
  CHECK(v8->accept(NULL, &comm, NULL) == ncclInvalidArgument);

  ncclNetVDeviceProps_v9_t vprops;
  memset(&vprops, 0, sizeof vprops);
  int vdev = 0;
  CHECK(v9->makeVDevice(&vdev, &vprops) == ncclInvalidArgument); /* ndevs 0 */
  vprops.ndevs = 5;
  CHECK(v9->makeVDevice(&vdev, &vprops) == ncclInvalidArgument);
  ncclNetVDeviceProps_v12_t vprops12;
  memset(&vprops12, 0, sizeof vprops12);
  vprops12.ndevs = 9;
  CHECK(v12->makeVDevice(&vdev, &vprops12) == ncclInvalidArgument);
  CHECK(v12->getProperties(0, NULL) == ncclInvalidArgument);
  CHECK(v12->finalize(NULL) == ncclSuccess);

  /* NCCL 2.28 calls finalize on the context slot after a failed init: NULL must be accepted. */
  CHECK(v11->finalize(NULL) == ncclSuccess);
  CHECK(v11->init(NULL, 0, NULL, logger, NULL) == ncclInvalidArgument);
  CHECK(v11->listen(NULL, 0, &data, &comm) == ncclInvalidArgument);
  CHECK(v11->setNetAttr(NULL, NULL) == ncclInvalidArgument);
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s <libnccl-net-roce.so> [--init-fails [TEXT]]\n", argv[0]);
    return 2;
  }
  int flags = RTLD_NOW | RTLD_LOCAL;
#if defined(__SANITIZE_ADDRESS__)
  /* Under LeakSanitizer keep the image mapped at dlclose: the statically linked libstdc++'s
   * exception pool and the plugin's never-destroyed singletons would otherwise be reported as
   * leaks of an unmapped module. The ci build (no sanitizer) exercises the real unload. */
  flags |= RTLD_NODELETE;
#endif
  void* lib = dlopen(argv[1], flags);
  if (lib == NULL) {
    fprintf(stderr, "FAILED: dlopen %s: %s\n", argv[1], dlerror());
    return 1;
  }
  const ncclNet_v6_t* v6 = (const ncclNet_v6_t*)dlsym(lib, NCCL_NET_PLUGIN_SYMBOL_V6);
  const ncclNet_v7_t* v7 = (const ncclNet_v7_t*)dlsym(lib, NCCL_NET_PLUGIN_SYMBOL_V7);
  const ncclNet_v8_t* v8 = (const ncclNet_v8_t*)dlsym(lib, NCCL_NET_PLUGIN_SYMBOL_V8);
  const ncclNet_v9_t* v9 = (const ncclNet_v9_t*)dlsym(lib, NCCL_NET_PLUGIN_SYMBOL_V9);
  const ncclNet_v10_t* v10 = (const ncclNet_v10_t*)dlsym(lib, NCCL_NET_PLUGIN_SYMBOL_V10);
  const ncclNet_v11_t* v11 = (const ncclNet_v11_t*)dlsym(lib, NCCL_NET_PLUGIN_SYMBOL_V11);
  const ncclNet_v12_t* v12 = (const ncclNet_v12_t*)dlsym(lib, NCCL_NET_PLUGIN_SYMBOL_V12);
  CHECK(v6 != NULL);
  CHECK(v7 != NULL);
  CHECK(v8 != NULL);
  CHECK(v9 != NULL);
  CHECK(v10 != NULL);
  CHECK(v11 != NULL);
  CHECK(v12 != NULL);
  if (v6 == NULL || v7 == NULL || v8 == NULL || v9 == NULL || v10 == NULL || v11 == NULL ||
      v12 == NULL) {
    return 1;
  }
  /* Internal symbols must not be reachable. */
  CHECK(dlsym(lib, "_ZN4roce3api4initEPFv17ncclDebugLogLevelmPKciS3_zE") == NULL);

  if (argc > 2 && strcmp(argv[2], "--init-fails") == 0) {
    const char* expected = argc > 3 ? argv[3] : NULL;
    ncclResult_t r = v8->init(logger);
    CHECK(r != ncclSuccess);
    CHECK(warn_lines == 1);
    if (expected != NULL && strstr(last_warn, expected) == NULL) {
      fprintf(stderr, "FAILED: the init WARN does not contain \"%s\"\n", expected);
      ++failures;
    }
    void* ctx = (void*)0x1;
    ncclNetCommConfig_v11_t config = {NCCL_NET_TRAFFIC_CLASS_UNDEF};
    warn_lines = 0;
    last_warn[0] = '\0';
    CHECK(v11->init(&ctx, 1, &config, logger, NULL) != ncclSuccess);
    CHECK(ctx == NULL);
    CHECK(warn_lines == 1);
    if (expected != NULL && strstr(last_warn, expected) == NULL) {
      fprintf(stderr, "FAILED: the v11 init WARN does not contain \"%s\"\n", expected);
      ++failures;
    }
    CHECK(v11->finalize(ctx) == ncclSuccess);

    void* bogus_context = &warn_lines; /* not a context init returned */
    void* listen_comm = (void*)0x1;
    char handle[NCCL_NET_HANDLE_MAXSIZE];
    warn_lines = 0;
    last_warn[0] = '\0';
    CHECK(v11->listen(bogus_context, 0, handle, &listen_comm) == ncclInternalError);
    CHECK(warn_lines == 1);
    if (strstr(last_warn, "is not a context returned by init") == NULL) {
      fprintf(stderr, "FAILED: the guard's WARN does not carry the exception's message\n");
      ++failures;
    }
    dlclose(lib);
    fprintf(stderr, failures == 0 ? "init failed cleanly\n" : "%d check(s) failed\n", failures);
    return failures == 0 ? 0 : 1;
  }

  const char* names[7] = {v6->name, v7->name, v8->name, v9->name, v10->name, v11->name, v12->name};
  for (int i = 0; i < 7; ++i) {
    CHECK(names[i] != NULL && strcmp(names[i], "RoCE") == 0);
  }
  /* Every function pointer after the name: 16 in v6, 18 in v7 and v8, 19 in v9/v10, 21 in v11
   * and v12. */
  check_common_entries("v6", (const void* const*)&v6->init, 16);
  check_common_entries("v7", (const void* const*)&v7->init, 18);
  check_common_entries("v8", (const void* const*)&v8->init, 18);
  check_common_entries("v9", (const void* const*)&v9->init, 19);
  check_common_entries("v10", (const void* const*)&v10->init, 19);
  check_common_entries("v11", (const void* const*)&v11->init, 21);
  check_common_entries("v12", (const void* const*)&v12->init, 21);
  CHECK(v11->finalize != NULL);

  check_arguments(v6, v8, v9, v11, v12);

  if (dlclose(lib) != 0) {
    fprintf(stderr, "FAILED: dlclose: %s\n", dlerror());
    ++failures;
  }
  if (failures == 0) {
    fprintf(stderr, "all table and argument checks passed\n");
  }
  return failures == 0 ? 0 : 1;
}
