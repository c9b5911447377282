/* Fake libcuda.so.1 (the CUDA driver API): version, cuInit, device enumeration, error names.
 * Signatures follow cuda.h (CUresult is an int enum, CUdevice an int). */
#include "fake_env.h"

static int g_init_result = -1; /* -1: cuInit not called yet */

static int init_result(void) { return (int)tg_fake_int("TG_FAKE_CUINIT_RESULT", 0); }

TG_FAKE_EXPORT int cuDriverGetVersion(int* v) {
  if (v == 0) return 1; /* CUDA_ERROR_INVALID_VALUE */
  *v = tg_fake_cuda_driver_version();
  return 0;
}

TG_FAKE_EXPORT int cuInit(unsigned flags) {
  if (flags != 0) return 1;
  g_init_result = init_result();
  return g_init_result;
}

static int ready(void) {
  if (g_init_result < 0) return 3; /* CUDA_ERROR_NOT_INITIALIZED */
  return g_init_result;
}

TG_FAKE_EXPORT int cuDeviceGetCount(int* count) {
  int r = ready();
  if (r != 0) return r;
  if (count == 0) return 1;
  *count = tg_fake_device_count();
  return 0;
}

TG_FAKE_EXPORT int cuDeviceGet(int* device, int ordinal) {
  int r = ready();
  if (r != 0) return r;
  if (device == 0) return 1;
  if (ordinal < 0 || ordinal >= tg_fake_device_count()) return 101; /* INVALID_DEVICE */
  *device = ordinal;
  return 0;
}

TG_FAKE_EXPORT int cuDeviceGetName(char* name, int len, int device) {
  int r = ready();
  if (r != 0) return r;
  if (name == 0 || len <= 0) return 1;
  if (device < 0 || device >= tg_fake_device_count()) return 101;
  tg_fake_copy(name, (unsigned)len, tg_fake_str("TG_FAKE_GPU_NAME", "NVIDIA H100 80GB HBM3"));
  return 0;
}

TG_FAKE_EXPORT int cuDeviceGetAttribute(int* value, int attribute, int device) {
  int r = ready();
  if (r != 0) return r;
  if (value == 0) return 1;
  if (device < 0 || device >= tg_fake_device_count()) return 101;
  int major = 0, minor = 0;
  tg_fake_cc(&major, &minor);
  switch (attribute) {
    case 75:
      *value = major;
      return 0; /* COMPUTE_CAPABILITY_MAJOR */
    case 76:
      *value = minor;
      return 0; /* COMPUTE_CAPABILITY_MINOR */
    case 16:
      *value = 132;
      return 0; /* MULTIPROCESSOR_COUNT */
    default:
      return 1;
  }
}

TG_FAKE_EXPORT int cuDeviceTotalMem_v2(unsigned long long* bytes, int device) {
  int r = ready();
  if (r != 0) return r;
  if (bytes == 0) return 1;
  if (device < 0 || device >= tg_fake_device_count()) return 101;
  *bytes = (unsigned long long)tg_fake_int("TG_FAKE_MEM_MB", 81559) << 20;
  return 0;
}

static const char* error_name(int e) {
  switch (e) {
    case 0:
      return "CUDA_SUCCESS";
    case 1:
      return "CUDA_ERROR_INVALID_VALUE";
    case 3:
      return "CUDA_ERROR_NOT_INITIALIZED";
    case 34:
      return "CUDA_ERROR_STUB_LIBRARY";
    case 100:
      return "CUDA_ERROR_NO_DEVICE";
    case 101:
      return "CUDA_ERROR_INVALID_DEVICE";
    case 304:
      return "CUDA_ERROR_OPERATING_SYSTEM";
    case 802:
      return "CUDA_ERROR_SYSTEM_NOT_READY";
    case 803:
      return "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH";
    case 804:
      return "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE";
    case 999:
      return "CUDA_ERROR_UNKNOWN";
    default:
      return 0;
  }
}

TG_FAKE_EXPORT int cuGetErrorName(int error, const char** name) {
  if (name == 0) return 1;
  *name = error_name(error);
  return *name ? 0 : 1;
}

TG_FAKE_EXPORT int cuGetErrorString(int error, const char** str) {
  if (str == 0) return 1;
  *str = error_name(error); /* the fake has no prose; the name is enough for tests */
  return *str ? 0 : 1;
}
