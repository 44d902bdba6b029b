// driver-lock-probe: can a copy into an application's GPU memory complete while one of the
// application's threads waits for the GPU inside the CUDA driver, and a kernel waits for that
// copy? That is the cycle that can hang GPUDirect over vroce (docs/vroce.md, "The driver lock"),
// where vroce's copies are driver calls made inside the application's process.
//
// This process plays the application. It starts a kernel that spins until a flag in device
// memory becomes non-zero, then makes its main thread wait for the GPU in one of two ways:
//   (default)           filling the stream's launch queue with empty kernels, so that a launch
//                       waits for room (PyTorch's 2000 queued all-reduces);
//   PROBE_BLOCK_LOAD=1  loading a module and launching its kernel while the spinning kernel runs
//                       (with CUDA_MODULE_LOADING=LAZY, PyTorch's first bf16 collective).
// One second later the flag is set by one of:
//   inproc  a second thread of this process, in the application's context, on a non-blocking
//           stream of its own (what vroce does today);
//   ctx     a second thread of this process, in a second context of its own;
//   helper  another process, which opened the flag's memory through cuIpcOpenMemHandle.
// PASS: the waiting thread got out (the kernel saw the flag). STALLED: it did not within the
// timeout (exit status 3). `cost` prints what the hand-off to a helper costs per copy: the median
// time of a copy and its wait, made in this process and made by the helper on request over a
// pipe, from host memory both processes map, at 8 B to 1 MiB, the GPU otherwise idle.
//
// A measurement tool for the GPU machine, not part of the build (it needs cuda.h and a GPU).
// Build and run (the build is one command line):
//   cc -O2 -o driver-lock-probe tools/driver-lock-probe/driver_lock_probe.c
//      -I/usr/local/cuda/include -L/usr/local/cuda/lib64/stubs -lcuda -lpthread
//   driver-lock-probe inproc|ctx|helper [launches (20000)] [timeout_s (30)]
//   driver-lock-probe cost [copies per size (2000)]
// Results: docs/benchmarks-log.md, "Where the driver lock is held".
#define _GNU_SOURCE  // memfd_create
#include <cuda.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char kPtx[] =
    ".version 7.0\n"
    ".target sm_80\n"
    ".address_size 64\n"
    ".visible .entry spin(.param .u64 flag) {\n"
    "  .reg .pred p; .reg .u32 v; .reg .u64 a;\n"
    "  ld.param.u64 a, [flag];\n"
    "  cvta.to.global.u64 a, a;\n"
    "WAIT:\n"
    "  ld.volatile.global.u32 v, [a];\n"
    "  setp.eq.u32 p, v, 0;\n"
    "  @p bra WAIT;\n"
    "  ret;\n"
    "}\n"
    ".visible .entry empty() { ret; }\n";

#define CHECK(call)                                                       \
  do {                                                                    \
    CUresult r_ = (call);                                                 \
    if (r_ != CUDA_SUCCESS) {                                             \
      const char* s_ = "?";                                               \
      cuGetErrorString(r_, &s_);                                          \
      fprintf(stderr, "probe: %s failed: %s (%d)\n", #call, s_, (int)r_); \
      exit(2);                                                            \
    }                                                                     \
  } while (0)

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static const char* mode;
static CUcontext app_ctx;
static CUdeviceptr flag;
static int to_helper = -1;    // requests to the helper process
static int from_helper = -1;  // its answers
static void* shared_host;     // host memory the helper copies from (a memfd both map)
enum { kRegionBytes = 1 << 20 };

static void helper_copy(uint32_t bytes);
static double t0;

static void on_timeout(int sig) {
  (void)sig;
  char line[160];
  int n = snprintf(line, sizeof line,
                   "probe: mode %s: STALLED - the waiting thread did not get out; the copy "
                   "never reached the kernel\n",
                   mode);
  (void)!write(2, line, (size_t)n);
  _exit(3);
}

static void* set_flag(void* arg) {
  (void)arg;
  usleep(1000 * 1000);
  const unsigned one = 1;
  double start = now_s();
  if (strcmp(mode, "helper") == 0) {
    memcpy(shared_host, &one, sizeof one);
    helper_copy(sizeof one);
    fprintf(stderr, "probe: mode helper: the helper's copy returned after %.3f s\n",
            now_s() - start);
    return NULL;
  }
  if (strcmp(mode, "ctx") == 0) {
    CUdevice dev;
    CUcontext own;
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuCtxCreate(&own, NULL, 0, dev));  // made current for this thread
  } else {
    CHECK(cuCtxSetCurrent(app_ctx));
  }
  CUstream s;
  CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CHECK(cuMemcpyHtoDAsync(flag, &one, sizeof one, s));
  CHECK(cuStreamSynchronize(s));
  fprintf(stderr, "probe: mode %s: the copy returned after %.3f s\n", mode, now_s() - start);
  return NULL;
}

// The helper process: opens the application's region through CUDA IPC, then serves copies. Each
// request on `in` is a byte count (0 ends it); the helper copies that many bytes from the shared
// host buffer to the start of the region, waits for the copy, and answers one byte on `out`.
static int helper_main(int in, int out, int shared_fd, const char* hex) {
  CUipcMemHandle h;
  for (size_t i = 0; i < sizeof h.reserved; ++i) {
    unsigned v;
    sscanf(hex + 2 * i, "%2x", &v);
    h.reserved[i] = (char)v;
  }
  void* shared = mmap(NULL, kRegionBytes, PROT_READ | PROT_WRITE, MAP_SHARED, shared_fd, 0);
  if (shared == MAP_FAILED) {
    perror("probe: helper: mmap");
    return 2;
  }
  CUdevice dev;
  CUcontext ctx;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  CUdeviceptr remote;
  CHECK(cuIpcOpenMemHandle(&remote, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
  CUstream s;
  CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  (void)!write(out, "r", 1);  // ready
  uint32_t bytes;
  while (read(in, &bytes, sizeof bytes) == (ssize_t)sizeof bytes && bytes != 0) {
    CHECK(cuMemcpyHtoDAsync(remote, shared, bytes, s));
    CHECK(cuStreamSynchronize(s));
    (void)!write(out, "d", 1);
  }
  return 0;
}

// Starts the helper on `flag`'s region and waits until it is ready.
static pid_t start_helper(const char* self) {
  CUipcMemHandle h;
  CHECK(cuIpcGetMemHandle(&h, flag));
  char hex[2 * sizeof h.reserved + 1];
  for (size_t i = 0; i < sizeof h.reserved; ++i) {
    sprintf(hex + 2 * i, "%02x", (unsigned char)h.reserved[i]);
  }
  int shared_fd = memfd_create("driver-lock-probe", 0);
  if (shared_fd < 0 || ftruncate(shared_fd, kRegionBytes) != 0) {
    perror("probe: memfd");
    exit(2);
  }
  shared_host = mmap(NULL, kRegionBytes, PROT_READ | PROT_WRITE, MAP_SHARED, shared_fd, 0);
  int request[2], reply[2];
  if (shared_host == MAP_FAILED || pipe(request) != 0 || pipe(reply) != 0) {
    perror("probe: helper set-up");
    exit(2);
  }
  pid_t pid = fork();
  if (pid == 0) {
    char in[16], out[16], fd[16];
    snprintf(in, sizeof in, "%d", request[0]);
    snprintf(out, sizeof out, "%d", reply[1]);
    snprintf(fd, sizeof fd, "%d", shared_fd);
    execl("/proc/self/exe", self, "--helper", in, out, fd, hex, (char*)NULL);
    _exit(127);
  }
  close(request[0]);
  close(reply[1]);
  to_helper = request[1];
  from_helper = reply[0];
  char ready;
  if (read(from_helper, &ready, 1) != 1) {
    fprintf(stderr, "probe: the helper process did not start\n");
    exit(2);
  }
  return pid;
}

// One copy through the helper: the bytes are already in shared_host.
static void helper_copy(uint32_t bytes) {
  char done;
  if (write(to_helper, &bytes, sizeof bytes) != (ssize_t)sizeof bytes ||
      read(from_helper, &done, 1) != 1) {
    fprintf(stderr, "probe: the helper process went away\n");
    exit(2);
  }
}

static int compare_doubles(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

// The price of the hand-off: the median time of one copy (and its wait) made in this process,
// and made by the helper on request over a pipe, for a few sizes, the GPU otherwise idle.
static int measure_cost(const char* self, int iterations) {
  pid_t helper = start_helper(self);
  CUstream s;
  CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  double* t = calloc((size_t)iterations, sizeof(double));
  static const uint32_t sizes[] = {8, 4096, 65536, 1048576};
  printf("probe: cost: median of %d copies, host to device, with the wait for each\n", iterations);
  printf("%10s %16s %16s\n", "bytes", "in-process us", "helper us");
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; ++k) {
    double median[2];
    for (int way = 0; way < 2; ++way) {
      for (int i = 0; i < iterations; ++i) {
        memset(shared_host, i & 0xff, sizes[k]);
        double begin = now_s();
        if (way == 0) {
          CHECK(cuMemcpyHtoDAsync(flag, shared_host, sizes[k], s));
          CHECK(cuStreamSynchronize(s));
        } else {
          helper_copy(sizes[k]);
        }
        t[i] = (now_s() - begin) * 1e6;
      }
      qsort(t, (size_t)iterations, sizeof(double), compare_doubles);
      median[way] = t[iterations / 2];
    }
    printf("%10u %16.1f %16.1f\n", sizes[k], median[0], median[1]);
  }
  uint32_t stop = 0;
  (void)!write(to_helper, &stop, sizeof stop);
  waitpid(helper, NULL, 0);
  free(t);
  return 0;
}

int main(int argc, char** argv) {
  if (argc >= 6 && strcmp(argv[1], "--helper") == 0) {
    return helper_main(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), argv[5]);
  }
  if (argc < 2 || (strcmp(argv[1], "inproc") && strcmp(argv[1], "ctx") &&
                   strcmp(argv[1], "helper") && strcmp(argv[1], "cost"))) {
    fprintf(stderr, "usage: %s inproc|ctx|helper [launches] [timeout_s]\n       %s cost [copies]\n",
            argv[0], argv[0]);
    return 2;
  }
  mode = argv[1];
  const int launches = argc > 2 ? atoi(argv[2]) : 20000;
  const int timeout_s = argc > 3 ? atoi(argv[3]) : 30;

  CUdevice dev;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuDevicePrimaryCtxRetain(&app_ctx, dev));
  CHECK(cuCtxSetCurrent(app_ctx));
  CUmodule mod;
  CUfunction spin, empty;
  CHECK(cuModuleLoadData(&mod, kPtx));
  CHECK(cuModuleGetFunction(&spin, mod, "spin"));
  CHECK(cuModuleGetFunction(&empty, mod, "empty"));
  CHECK(cuMemAlloc(&flag, kRegionBytes));
  CHECK(cuMemsetD32(flag, 0, 1));
  CHECK(cuCtxSynchronize());
  if (strcmp(mode, "cost") == 0) {
    return measure_cost(argv[0], argc > 2 ? atoi(argv[2]) : 2000);
  }

  pid_t helper = -1;
  if (strcmp(mode, "helper") == 0) {
    helper = start_helper(argv[0]);  // ready (the region opened) before the wait begins
  }

  CUstream s;
  CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  void* spin_args[] = {&flag};
  signal(SIGALRM, on_timeout);
  alarm((unsigned)timeout_s);
  t0 = now_s();
  CHECK(cuLaunchKernel(spin, 1, 1, 1, 1, 1, 1, 0, s, spin_args, NULL));
  pthread_t setter;
  pthread_create(&setter, NULL, set_flag, NULL);
  if (getenv("PROBE_BLOCK_LOAD") != NULL) {
    // The other wait: loading a module (lazily, at its first use) while the kernel runs.
    static const char kOther[] =
        ".version 7.0\n.target sm_80\n.address_size 64\n.visible .entry other() { ret; }\n";
    CUmodule other_mod;
    CUfunction other;
    CUstream s2;
    CHECK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    CHECK(cuModuleLoadData(&other_mod, kOther));
    CHECK(cuModuleGetFunction(&other, other_mod, "other"));
    CHECK(cuLaunchKernel(other, 1, 1, 1, 1, 1, 1, 0, s2, NULL, NULL));
    CHECK(cuStreamSynchronize(s2));
  } else {
    for (int i = 0; i < launches; ++i) {
      CHECK(cuLaunchKernel(empty, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
    }
  }
  const double queued = now_s() - t0;
  CHECK(cuStreamSynchronize(s));
  alarm(0);
  fprintf(stderr, "probe: mode %s: the waiting thread got out after %.3f s (%s)\n", mode, queued,
          queued >= 0.9 ? "it waited, as intended" : "it never waited");
  pthread_join(setter, NULL);
  printf("probe: mode %s: PASS - %d launches behind the waiting kernel finished in %.3f s\n", mode,
         launches, now_s() - t0);
  if (helper > 0) {
    uint32_t stop = 0;
    (void)!write(to_helper, &stop, sizeof stop);
    waitpid(helper, NULL, 0);
  }
  return 0;
}
