// core/thread_name.hpp — names the calling thread, so `top -H`, `perf` and gdb show what it is.
#pragma once

#include <pthread.h>

#include <string_view>

namespace queen {

/// Names the calling thread `name`, cut to the 15 bytes Linux keeps. Failures are ignored: a
/// name is a diagnostic aid only.
inline void set_thread_name(std::string_view name) noexcept {
    char text[16] = {};
    name.copy(text, sizeof(text) - 1);
    (void)pthread_setname_np(pthread_self(), text);
}

}  // namespace queen
