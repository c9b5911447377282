// Default options for AddressSanitizer, LeakSanitizer and UBSan, compiled into every sanitized
// executable (the truegreen binary and each test binary) so that they hold however the program is
// started: by ctest, by a test as a subprocess, or by hand. Nothing here exists in normal builds.
//
// Include this header in exactly one .cc file per executable (it defines functions).
#pragma once

#if defined(__SANITIZE_ADDRESS__)
extern "C" {
// ONNX Runtime and the CUDA libraries keep process-lifetime allocations that are never freed; they
// are loaded with RTLD_NODELETE and are not ours to fix. Our own code gets no suppression.
const char* __lsan_default_suppressions() {
  return "leak:libonnxruntime.so\n"
         "leak:libonnxruntime_providers\n"
         "leak:libcuda\n"
         "leak:libcudnn\n"
         "leak:libcublas\n";
}
// A matched suppression is not a finding: without print_suppressions=0 LeakSanitizer lists them
// on stderr at exit, which would break the one-JSON-object-per-line rule of --log-format json.
const char* __lsan_default_options() { return "print_suppressions=0"; }
const char* __asan_default_options() { return "detect_leaks=1:detect_odr_violation=0"; }
const char* __ubsan_default_options() { return "print_stacktrace=1:halt_on_error=1"; }
}
#endif
