/* Fake ONNX Runtime core (libonnxruntime.so) whose build flavor reads as GPU.
 *
 * It wraps the real CPU-built core (setup's fixture in third_party/onnxruntime-cpu, not the
 * default GPU-flavor pair): OrtGetApiBase dlopens the real library (path compiled in,
 * TG_FAKE_REAL_ORT), copies its OrtApi table and replaces only GetAvailableProviders /
 * ReleaseAvailableProviders, so the core lists the CUDA and TensorRT providers as a core from the
 * GPU release archive does. Everything else (environments, sessions, provider registration) is the
 * real core's code. truegreen loads it through the same LibraryLoader path as the real core
 * (--lib-path first), which is what the build-flavor rule's tests need: a GPU-flavor core paired
 * with the (fake) GPU providers passes the rule; the real CPU-built core with the same providers
 * fails.
 *
 * TG_FAKE_ORT_FLAVOR=cpu makes it report the real core's own list (a CPU build). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_env.h"
#include "onnxruntime_c_api.h"

static const OrtApiBase* g_real_base;
static OrtApi g_api;
static int g_api_ready;
static OrtApiBase g_base;

static const char* const kGpuProviders[] = {"TensorrtExecutionProvider", "CUDAExecutionProvider",
                                            "CPUExecutionProvider"};

static OrtStatus* FakeGetAvailableProviders(char*** out, int* length) {
  const int n = (int)(sizeof kGpuProviders / sizeof kGpuProviders[0]);
  char** list = (char**)calloc((size_t)n, sizeof(char*));
  if (list == NULL) return g_api.CreateStatus(ORT_FAIL, "fake core: out of memory");
  for (int i = 0; i < n; ++i) list[i] = strdup(kGpuProviders[i]);
  *out = list;
  *length = n;
  return NULL;
}

static OrtStatus* FakeReleaseAvailableProviders(char** list, int length) {
  if (list == NULL) return NULL;
  for (int i = 0; i < length; ++i) free(list[i]);
  free(list);
  return NULL;
}

static const OrtApi* FakeGetApi(uint32_t version) {
  const OrtApi* real = g_real_base->GetApi(version);
  if (real == NULL) return NULL;
  if (strcmp(tg_fake_str("TG_FAKE_ORT_FLAVOR", "gpu"), "cpu") == 0) return real;
  if (!g_api_ready) {
    /* The header and the real core are the same release, so the table sizes agree. */
    memcpy(&g_api, real, sizeof g_api);
    g_api.GetAvailableProviders = FakeGetAvailableProviders;
    g_api.ReleaseAvailableProviders = FakeReleaseAvailableProviders;
    g_api_ready = 1;
  }
  return &g_api;
}

static const char* NoVersion(void) { return "fake-core: the real ONNX Runtime did not load"; }
static const OrtApi* NoApi(uint32_t version) {
  (void)version;
  return NULL;
}

TG_FAKE_EXPORT const OrtApiBase* OrtGetApiBase(void) {
  if (g_real_base == NULL) {
    void* real = dlopen(TG_FAKE_REAL_ORT, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    const OrtApiBase* (*get)(void) =
        real ? (const OrtApiBase* (*)(void))dlsym(real, "OrtGetApiBase") : NULL;
    if (get == NULL) {
      fprintf(stderr, "fake ORT core: cannot load %s: %s\n", TG_FAKE_REAL_ORT, dlerror());
      g_base.GetVersionString = NoVersion;
      g_base.GetApi = NoApi;
      return &g_base;
    }
    g_real_base = get();
    g_base.GetVersionString = g_real_base->GetVersionString;
    g_base.GetApi = FakeGetApi;
  }
  return &g_base;
}
