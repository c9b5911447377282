// Linked into every test executable: the sanitizer defaults (see common/sanitizer_defaults.h).
#include "common/sanitizer_defaults.h"
