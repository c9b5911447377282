/* Shared helpers of the fake GPU libraries: every behaviour is read from an environment variable
 * at call time, so one build of the fakes serves every test case (each case runs truegreen as a
 * subprocess with its own environment). Header-only, C99. */
#ifndef TG_FAKEGPU_FAKE_ENV_H_
#define TG_FAKEGPU_FAKE_ENV_H_

#include <stdlib.h>
#include <string.h>

#define TG_FAKE_EXPORT __attribute__((visibility("default")))

/* Integer value of `name`, or `def` when unset, empty or not a number. */
static inline long long tg_fake_int(const char* name, long long def) {
  const char* v = getenv(name);
  if (v == NULL || *v == '\0') return def;
  char* end = NULL;
  long long x = strtoll(v, &end, 10);
  return (end != NULL && *end == '\0') ? x : def;
}

/* String value of `name`, or `def` when unset. */
static inline const char* tg_fake_str(const char* name, const char* def) {
  const char* v = getenv(name);
  return (v == NULL) ? def : v;
}

/* Copies `s` into buf[len] like the NVIDIA APIs do (truncating, always terminated). */
static inline void tg_fake_copy(char* buf, unsigned len, const char* s) {
  if (buf == NULL || len == 0) return;
  strncpy(buf, s, len - 1);
  buf[len - 1] = '\0';
}

/* TG_FAKE_CC="9.0" -> major 9, minor 0. */
static inline void tg_fake_cc(int* major, int* minor) {
  const char* cc = tg_fake_str("TG_FAKE_CC", "9.0");
  int ma = 0, mi = 0;
  const char* dot = strchr(cc, '.');
  ma = atoi(cc);
  mi = dot ? atoi(dot + 1) : 0;
  if (major) *major = ma;
  if (minor) *minor = mi;
}

static inline int tg_fake_device_count(void) { return (int)tg_fake_int("TG_FAKE_DEVICE_COUNT", 1); }

/* The CUDA version the fake driver supports (cuDriverGetVersion encoding). */
static inline int tg_fake_cuda_driver_version(void) {
  return (int)tg_fake_int("TG_FAKE_CUDA_DRIVER_VERSION", 13000);
}

#endif /* TG_FAKEGPU_FAKE_ENV_H_ */
