/* Fake libnccl.so.2 (TG_FAKE_NCCL) and libcurand.so.10 (TG_FAKE_CURAND). NCCL >= 2.9 encodes
 * major*10000 + minor*100 + patch (TG_FAKE_NCCL_VERSION); cuRAND major*1000 + minor*100 + patch. */
#include "fake_env.h"

#ifdef TG_FAKE_NCCL
TG_FAKE_EXPORT int ncclGetVersion(int* v) {
  if (v == 0) return 4; /* ncclInvalidArgument */
  *v = (int)tg_fake_int("TG_FAKE_NCCL_VERSION", 22809);
  return 0;
}
#endif
#ifdef TG_FAKE_CURAND
TG_FAKE_EXPORT int curandGetVersion(int* v) {
  if (v == 0) return 102;
  *v = (int)tg_fake_int("TG_FAKE_CURAND_VERSION", 10400);
  return 0;
}
#endif
