/* Fake libnvinfer.so.10 / libnvonnxparser.so.10 (TG_FAKE_ONNXPARSER): TensorRT version queries.
 * TensorRT 10 encoding: major*10000 + minor*100 + patch (TG_FAKE_TRT_VERSION). */
#include "fake_env.h"

static int version(void) { return (int)tg_fake_int("TG_FAKE_TRT_VERSION", 101300); }

#ifdef TG_FAKE_ONNXPARSER
TG_FAKE_EXPORT int getNvOnnxParserVersion(void) { return version(); }
#else
TG_FAKE_EXPORT int getInferLibVersion(void) { return version(); }
#endif
