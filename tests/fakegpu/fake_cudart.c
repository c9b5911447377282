/* Fake libcudart.so.13 (the CUDA runtime): the two version queries truegreen reads. Like the real
 * runtime, cudaDriverGetVersion reports 0 (not an error) when no driver is present; the fake
 * always reports TG_FAKE_CUDA_DRIVER_VERSION. */
#include "fake_env.h"

TG_FAKE_EXPORT int cudaRuntimeGetVersion(int* v) {
  if (v == 0) return 1; /* cudaErrorInvalidValue */
  *v = (int)tg_fake_int("TG_FAKE_CUDART_VERSION", 13000);
  return 0;
}

TG_FAKE_EXPORT int cudaDriverGetVersion(int* v) {
  if (v == 0) return 1;
  *v = tg_fake_cuda_driver_version();
  return 0;
}

TG_FAKE_EXPORT const char* cudaGetErrorName(int e) {
  switch (e) {
    case 0:
      return "cudaSuccess";
    case 35:
      return "cudaErrorInsufficientDriver";
    case 100:
      return "cudaErrorNoDevice";
    default:
      return "cudaErrorUnknown";
  }
}
