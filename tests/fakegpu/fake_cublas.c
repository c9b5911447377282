/* Fake libcublas.so.13 / libcublasLt.so.13 (TG_FAKE_LT selects the Lt flavour): version queries.
 * Version encoding as cuBLAS: major*10000 + minor*100 + patch (TG_FAKE_CUBLAS_VERSION). */
#include <stddef.h>

#include "fake_env.h"

static int version(void) { return (int)tg_fake_int("TG_FAKE_CUBLAS_VERSION", 130100); }

/* libraryPropertyType: 0 MAJOR_VERSION, 1 MINOR_VERSION, 2 PATCH_LEVEL. */
static int property(int type, int* value) {
  if (value == 0) return 7; /* CUBLAS_STATUS_INVALID_VALUE */
  int v = version();
  switch (type) {
    case 0:
      *value = v / 10000;
      return 0;
    case 1:
      *value = (v / 100) % 100;
      return 0;
    case 2:
      *value = v % 100;
      return 0;
    default:
      return 7;
  }
}

#ifdef TG_FAKE_LT
TG_FAKE_EXPORT size_t cublasLtGetVersion(void) { return (size_t)version(); }
TG_FAKE_EXPORT int cublasLtGetProperty(int type, int* value) { return property(type, value); }
#else
TG_FAKE_EXPORT int cublasGetProperty(int type, int* value) { return property(type, value); }
/* cublasGetVersion_v2 takes a handle; NULL is accepted by the real library too. */
TG_FAKE_EXPORT int cublasGetVersion_v2(void* handle, int* v) {
  if (v == 0) return 7;
  *v = version();
  return 0;
}
#endif
