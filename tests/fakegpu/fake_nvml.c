/* Fake libnvidia-ml.so.1: the NVML entry points truegreen probes, with NVML's real C signatures
 * (handles are opaque pointers; return values are nvmlReturn_t codes). */
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "fake_env.h"

typedef struct {
  unsigned long long total, free, used;
} tg_nvml_memory_t;

/* Reference-counted like the real NVML: each successful init needs one nvmlShutdown. */
static int g_initialized = 0;

static int init_result(void) { return (int)tg_fake_int("TG_FAKE_NVML_INIT_RESULT", 0); }

TG_FAKE_EXPORT int nvmlInit_v2(void) {
  int r = init_result();
  if (r == 0) ++g_initialized;
  return r;
}
TG_FAKE_EXPORT int nvmlInit(void) { return nvmlInit_v2(); }
TG_FAKE_EXPORT int nvmlInitWithFlags(unsigned flags) { return nvmlInit_v2(); }
TG_FAKE_EXPORT int nvmlShutdown(void) {
  if (!g_initialized) return 1; /* NVML_ERROR_UNINITIALIZED */
  --g_initialized;
  return 0;
}

TG_FAKE_EXPORT const char* nvmlErrorString(int r) {
  switch (r) {
    case 0:
      return "Success";
    case 1:
      return "Uninitialized";
    case 2:
      return "Invalid Argument";
    case 3:
      return "Not Supported";
    case 4:
      return "Insufficient Permissions";
    case 9:
      return "Driver Not Loaded";
    case 12:
      return "NVML Shared Library Not Found";
    case 15:
      return "GPU is lost";
    case 17:
      return "OS Call Failed";
    case 18:
      return "Driver/library version mismatch";
    default:
      return "Unknown Error";
  }
}

TG_FAKE_EXPORT int nvmlSystemGetDriverVersion(char* version, unsigned length) {
  if (!g_initialized) return 1;
  if (version == NULL) return 2;
  tg_fake_copy(version, length, tg_fake_str("TG_FAKE_DRIVER_VERSION", "580.65.06"));
  return 0;
}

TG_FAKE_EXPORT int nvmlSystemGetCudaDriverVersion(int* v) {
  if (v == NULL) return 2;
  *v = tg_fake_cuda_driver_version();
  return 0;
}
TG_FAKE_EXPORT int nvmlSystemGetCudaDriverVersion_v2(int* v) {
  return nvmlSystemGetCudaDriverVersion(v);
}

TG_FAKE_EXPORT int nvmlDeviceGetCount_v2(unsigned* count) {
  if (!g_initialized) return 1;
  if (count == NULL) return 2;
  *count = (unsigned)tg_fake_device_count();
  return 0;
}
TG_FAKE_EXPORT int nvmlDeviceGetCount(unsigned* count) { return nvmlDeviceGetCount_v2(count); }

/* TG_FAKE_NVML_LOST=1, or TG_FAKE_NVML_LOST_FILE naming a file that exists (so a test can lose
 * and recover the GPU while the process runs): device calls answer NVML_ERROR_GPU_IS_LOST (15). */
static int gpu_lost(void) {
  if (tg_fake_int("TG_FAKE_NVML_LOST", 0) != 0) return 1;
  const char* f = tg_fake_str("TG_FAKE_NVML_LOST_FILE", "");
  return *f != '\0' && access(f, F_OK) == 0;
}

/* Handles are index + 1 so that NULL is never a valid device. */
TG_FAKE_EXPORT int nvmlDeviceGetHandleByIndex_v2(unsigned index, void** device) {
  if (!g_initialized) return 1;
  if (gpu_lost()) return 15;
  if (device == NULL || index >= (unsigned)tg_fake_device_count()) return 2;
  *device = (void*)(uintptr_t)(index + 1);
  return 0;
}
TG_FAKE_EXPORT int nvmlDeviceGetHandleByIndex(unsigned index, void** device) {
  return nvmlDeviceGetHandleByIndex_v2(index, device);
}

static int valid(void* device) {
  uintptr_t i = (uintptr_t)device;
  return g_initialized && i >= 1 && i <= (uintptr_t)tg_fake_device_count();
}

TG_FAKE_EXPORT int nvmlDeviceGetName(void* device, char* name, unsigned length) {
  if (!valid(device) || name == NULL) return 2;
  tg_fake_copy(name, length, tg_fake_str("TG_FAKE_GPU_NAME", "NVIDIA H100 80GB HBM3"));
  return 0;
}

TG_FAKE_EXPORT int nvmlDeviceGetUUID(void* device, char* uuid, unsigned length) {
  if (!valid(device) || uuid == NULL) return 2;
  char buf[96];
  snprintf(buf, sizeof buf, "GPU-fa4e0000-0000-4000-8000-%012u", (unsigned)(uintptr_t)device - 1);
  tg_fake_copy(uuid, length, buf);
  return 0;
}

TG_FAKE_EXPORT int nvmlDeviceGetCudaComputeCapability(void* device, int* major, int* minor) {
  if (!valid(device) || major == NULL || minor == NULL) return 2;
  tg_fake_cc(major, minor);
  return 0;
}

static int memory(void* device, tg_nvml_memory_t* m) {
  if (!valid(device) || m == NULL) return 2;
  if (gpu_lost()) return 15;
  unsigned long long total = (unsigned long long)tg_fake_int("TG_FAKE_MEM_MB", 81559) << 20;
  unsigned long long used = (unsigned long long)tg_fake_int("TG_FAKE_NVML_MEM_USED_MB", 0) << 20;
  if (used > total) used = total;
  m->total = total;
  m->used = used;
  m->free = total - used;
  return 0;
}
TG_FAKE_EXPORT int nvmlDeviceGetMemoryInfo(void* device, tg_nvml_memory_t* m) {
  return memory(device, m);
}

TG_FAKE_EXPORT int nvmlDeviceGetMigMode(void* device, unsigned* current, unsigned* pending) {
  if (!valid(device) || current == NULL || pending == NULL) return 2;
  long long mig = tg_fake_int("TG_FAKE_MIG", 0);
  if (mig < 0) return 3; /* TG_FAKE_MIG=-1: NVML_ERROR_NOT_SUPPORTED (pre-Ampere GPUs) */
  *current = (unsigned)mig;
  *pending = (unsigned)mig;
  return 0;
}

TG_FAKE_EXPORT int nvmlDeviceGetCurrPcieLinkGeneration(void* device, unsigned* gen) {
  if (!valid(device) || gen == NULL) return 2;
  *gen = (unsigned)tg_fake_int("TG_FAKE_PCIE_GEN", 5);
  return 0;
}
TG_FAKE_EXPORT int nvmlDeviceGetMaxPcieLinkGeneration(void* device, unsigned* gen) {
  return nvmlDeviceGetCurrPcieLinkGeneration(device, gen);
}
TG_FAKE_EXPORT int nvmlDeviceGetCurrPcieLinkWidth(void* device, unsigned* width) {
  if (!valid(device) || width == NULL) return 2;
  *width = (unsigned)tg_fake_int("TG_FAKE_PCIE_WIDTH", 16);
  return 0;
}
TG_FAKE_EXPORT int nvmlDeviceGetMaxPcieLinkWidth(void* device, unsigned* width) {
  return nvmlDeviceGetCurrPcieLinkWidth(device, width);
}

/* Live counters: TG_FAKE_NVML_UTIL (percent; -1 = NOT_SUPPORTED), TG_FAKE_NVML_POWER_MW,
 * TG_FAKE_NVML_PCIE_TX_KBPS / TG_FAKE_NVML_PCIE_RX_KBPS. */
static int live_check(void* device) {
  if (!valid(device)) return 2;
  return gpu_lost() ? 15 : 0;
}

typedef struct {
  unsigned gpu, memory;
} tg_nvml_utilization_t;

TG_FAKE_EXPORT int nvmlDeviceGetUtilizationRates(void* device, tg_nvml_utilization_t* u) {
  int r = live_check(device);
  if (r != 0 || u == NULL) return r != 0 ? r : 2;
  long long util = tg_fake_int("TG_FAKE_NVML_UTIL", 0);
  /* TG_FAKE_NVML_UTIL_FILE: while the named file exists, its number overrides TG_FAKE_NVML_UTIL
   * (a test changes the utilisation of a running process). */
  const char* f = tg_fake_str("TG_FAKE_NVML_UTIL_FILE", "");
  FILE* in = *f != '\0' ? fopen(f, "r") : NULL;
  if (in != NULL) {
    long long v = 0;
    if (fscanf(in, "%lld", &v) == 1) util = v;
    fclose(in);
  }
  if (util < 0) return 3;
  u->gpu = (unsigned)util;
  u->memory = (unsigned)util / 2;
  return 0;
}

TG_FAKE_EXPORT int nvmlDeviceGetPowerUsage(void* device, unsigned* mw) {
  int r = live_check(device);
  if (r != 0 || mw == NULL) return r != 0 ? r : 2;
  *mw = (unsigned)tg_fake_int("TG_FAKE_NVML_POWER_MW", 0);
  return 0;
}

/* counter: NVML_PCIE_UTIL_TX_BYTES = 0, NVML_PCIE_UTIL_RX_BYTES = 1; value in KB/s. */
TG_FAKE_EXPORT int nvmlDeviceGetPcieThroughput(void* device, int counter, unsigned* value) {
  int r = live_check(device);
  if (r != 0 || value == NULL || counter < 0 || counter > 1) return r != 0 ? r : 2;
  *value = (unsigned)tg_fake_int(counter == 0 ? "TG_FAKE_NVML_PCIE_TX_KBPS"
                                              : "TG_FAKE_NVML_PCIE_RX_KBPS",
                                 0);
  return 0;
}

/* nvmlProcessInfo_t (the _v2/_v3 calls) and nvmlProcessInfo_v1_t (the unversioned call). */
typedef struct {
  unsigned pid;
  unsigned long long usedGpuMemory;
  unsigned gpuInstanceId, computeInstanceId;
} tg_nvml_process_t;
typedef struct {
  unsigned pid;
  unsigned long long usedGpuMemory;
} tg_nvml_process_v1_t;

/* The caller's pid as the real driver reports it, which does not support PID namespaces: its pid
 * in the initial namespace, the first NSpid field of /proc/self/status (while /proc is the host's
 * procfs, e.g. under `unshare --pid --fork` without --mount-proc). */
static unsigned host_pid(void) {
  unsigned v = (unsigned)getpid();
  FILE* f = fopen("/proc/self/status", "r");
  if (f == NULL) return v;
  char line[256];
  while (fgets(line, sizeof(line), f) != NULL) {
    if (strncmp(line, "NSpid:", 6) == 0) {
      v = (unsigned)strtoul(line + 6, NULL, 10);
      break;
    }
  }
  fclose(f);
  return v;
}

/* TG_FAKE_NVML_PROCS: comma-separated pids, "self" = the calling process, "hostself" = the same
 * as the real driver names it (host_pid); unset or empty = no compute process. At most 16
 * entries. Each uses 256 MiB. */
static unsigned fake_pids(unsigned* pids, unsigned cap) {
  const char* s = tg_fake_str("TG_FAKE_NVML_PROCS", "");
  unsigned n = 0;
  while (*s != '\0' && n < cap) {
    if (strncmp(s, "self", 4) == 0) {
      pids[n++] = (unsigned)getpid();
      s += 4;
    } else if (strncmp(s, "hostself", 8) == 0) {
      pids[n++] = host_pid();
      s += 8;
    } else {
      char* end = NULL;
      unsigned long v = strtoul(s, &end, 10);
      if (end == s) break;
      pids[n++] = (unsigned)v;
      s = end;
    }
    if (*s == ',') ++s;
  }
  return n;
}

static int processes(void* device, unsigned* count, void* infos, int v1) {
  int r = live_check(device);
  if (r != 0 || count == NULL) return r != 0 ? r : 2;
  unsigned pids[16];
  unsigned n = fake_pids(pids, 16);
  if (*count < n || (n > 0 && infos == NULL)) {
    *count = n;
    return n == 0 ? 0 : 7; /* NVML_ERROR_INSUFFICIENT_SIZE */
  }
  for (unsigned i = 0; i < n; ++i) {
    if (v1) {
      tg_nvml_process_v1_t* p = (tg_nvml_process_v1_t*)infos + i;
      p->pid = pids[i];
      p->usedGpuMemory = 256ull << 20;
    } else {
      tg_nvml_process_t* p = (tg_nvml_process_t*)infos + i;
      p->pid = pids[i];
      p->usedGpuMemory = 256ull << 20;
      p->gpuInstanceId = 0xFFFFFFFFu;
      p->computeInstanceId = 0xFFFFFFFFu;
    }
  }
  *count = n;
  return 0;
}

TG_FAKE_EXPORT int nvmlDeviceGetComputeRunningProcesses_v3(void* device, unsigned* count,
                                                           void* infos) {
  return processes(device, count, infos, 0);
}
TG_FAKE_EXPORT int nvmlDeviceGetComputeRunningProcesses_v2(void* device, unsigned* count,
                                                           void* infos) {
  return processes(device, count, infos, 0);
}
TG_FAKE_EXPORT int nvmlDeviceGetComputeRunningProcesses(void* device, unsigned* count,
                                                        void* infos) {
  return processes(device, count, infos, 1);
}
