/* Fake ONNX Runtime GPU provider libraries (libonnxruntime_providers_cuda.so, _tensorrt.so).
 *
 * They exist so that a fake stack can be "all good": the real provider libraries need hundreds of
 * CUDA symbols the fakes do not have. A fake provider is linked against the fake CUDA libraries,
 * so its ELF DT_NEEDED lists the real sonames (libcudart.so.13, libcuda.so.1, libcudnn.so.9 ...)
 * and loading it fails, exactly like the real one, when one of them is missing. It exports the
 * plugin-EP entry points with their real C signatures but never creates a factory (truegreen's
 * probe only loads the library; it does not register it with ORT). */
#include <stddef.h>

#include "fake_env.h"

/* References into the fake CUDA libraries keep them in DT_NEEDED. */
extern int cudaRuntimeGetVersion(int*);
extern int cuDriverGetVersion(int*);
#ifdef TG_FAKE_TENSORRT
extern int getInferLibVersion(void);
extern int getNvOnnxParserVersion(void);
extern size_t cudnnGetVersion(void);
#else
extern int cublasGetProperty(int, int*);
extern size_t cublasLtGetVersion(void);
extern int curandGetVersion(int*);
#endif

TG_FAKE_EXPORT void* tg_fake_provider_dependencies[] = {
    (void*)&cudaRuntimeGetVersion, (void*)&cuDriverGetVersion,
#ifdef TG_FAKE_TENSORRT
    (void*)&getInferLibVersion,    (void*)&getNvOnnxParserVersion, (void*)&cudnnGetVersion,
#else
    (void*)&cublasGetProperty,     (void*)&cublasLtGetVersion, (void*)&curandGetVersion,
#endif
};

/* OrtStatus* CreateEpFactories(const char*, const OrtApiBase*, const OrtLogger*,
 *                              OrtEpFactory**, size_t, size_t*) — reports zero factories. */
TG_FAKE_EXPORT void* CreateEpFactories(const char* registration_name, const void* ort_api_base,
                                       const void* default_logger, void** factories,
                                       size_t max_factories, size_t* num_factories) {
  if (num_factories) *num_factories = 0;
  return NULL;
}

TG_FAKE_EXPORT void* ReleaseEpFactory(void* factory) { return NULL; }
