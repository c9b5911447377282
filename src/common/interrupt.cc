#include "common/interrupt.h"

#include <csignal>

namespace tg::common {
namespace {

std::atomic<bool> g_sigint{false};
static_assert(std::atomic<bool>::is_always_lock_free, "the SIGINT handler stores to this flag");

extern "C" void OnSigint(int) { g_sigint.store(true); }

}  // namespace

SigintScope::SigintScope() {
  g_sigint.store(false);
  previous_ = std::signal(SIGINT, OnSigint);
}

SigintScope::~SigintScope() { std::signal(SIGINT, previous_); }

const std::atomic<bool>* SigintScope::Flag() { return &g_sigint; }

}  // namespace tg::common
