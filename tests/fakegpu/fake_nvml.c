/* Fake libnvidia-ml.so.1: the NVML entry points truegreen probes, with NVML's real C signatures
 * (handles are opaque pointers; return values are nvmlReturn_t codes). */
#include <stdint.h>
#include <stdio.h>

#include "fake_env.h"

typedef struct {
  unsigned long long total, free, used;
} tg_nvml_memory_t;

static int g_initialized = 0;

static int init_result(void) { return (int)tg_fake_int("TG_FAKE_NVML_INIT_RESULT", 0); }

TG_FAKE_EXPORT int nvmlInit_v2(void) {
  int r = init_result();
  if (r == 0) g_initialized = 1;
  return r;
}
TG_FAKE_EXPORT int nvmlInit(void) { return nvmlInit_v2(); }
TG_FAKE_EXPORT int nvmlInitWithFlags(unsigned flags) { return nvmlInit_v2(); }
TG_FAKE_EXPORT int nvmlShutdown(void) {
  if (!g_initialized) return 1; /* NVML_ERROR_UNINITIALIZED */
  g_initialized = 0;
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

/* Handles are index + 1 so that NULL is never a valid device. */
TG_FAKE_EXPORT int nvmlDeviceGetHandleByIndex_v2(unsigned index, void** device) {
  if (!g_initialized) return 1;
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
  unsigned long long total = (unsigned long long)tg_fake_int("TG_FAKE_MEM_MB", 81559) << 20;
  m->total = total;
  m->used = 0;
  m->free = total;
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
