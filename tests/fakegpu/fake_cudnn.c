/* Fake libcudnn.so.9 and its sub-libraries (libcudnn_ops.so.9 ...; TG_FAKE_CUDNN_SUB defined):
 * cudnnGetVersion = major*10000 + minor*100 + patch (TG_FAKE_CUDNN_VERSION), cudnnGetCudartVersion
 * = the runtime it was built against (TG_FAKE_CUDNN_CUDART_VERSION, default
 * TG_FAKE_CUDART_VERSION). */
#include <stddef.h>

#include "fake_env.h"

#ifndef TG_FAKE_CUDNN_SUB
TG_FAKE_EXPORT size_t cudnnGetVersion(void) {
  return (size_t)tg_fake_int("TG_FAKE_CUDNN_VERSION", 91300);
}
TG_FAKE_EXPORT size_t cudnnGetCudartVersion(void) {
  long long rt = tg_fake_int("TG_FAKE_CUDART_VERSION", 13000);
  return (size_t)tg_fake_int("TG_FAKE_CUDNN_CUDART_VERSION", rt);
}
TG_FAKE_EXPORT const char* cudnnGetErrorString(int status) {
  return status == 0 ? "CUDNN_STATUS_SUCCESS" : "CUDNN_STATUS_INTERNAL_ERROR";
}
#else
/* Sub-libraries export the same version query under a per-library name in real cuDNN 9; one
 * symbol keeps the fake loadable and identifiable. */
TG_FAKE_EXPORT size_t tg_fake_cudnn_sublibrary_version(void) {
  return (size_t)tg_fake_int("TG_FAKE_CUDNN_VERSION", 91300);
}
#endif
