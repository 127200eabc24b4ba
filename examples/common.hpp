// examples/common.hpp — flag parsing and Ctrl-C handling shared by the examples (not SDK code).
#pragma once

#include <pthread.h>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <thread>

namespace examples {

/// `--name value` pairs from argv; unknown names are kept, so each example reads its own.
inline std::map<std::string, std::string> parse_flags(int argc, char** argv) {
    std::map<std::string, std::string> flags;
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string name = argv[i];
        if (name.rfind("--", 0) != 0) {
            std::fprintf(stderr, "expected --name value pairs, got '%s'\n", argv[i]);
            std::exit(2);
        }
        flags[name.substr(2)] = argv[i + 1];
    }
    return flags;
}

inline std::string flag(const std::map<std::string, std::string>& flags, const std::string& name,
                        const std::string& fallback) {
    const auto found = flags.find(name);
    return found == flags.end() ? fallback : found->second;
}

/// Blocks SIGINT/SIGTERM in every thread and runs `on_signal` on a helper thread when one
/// arrives. Call before starting other threads.
inline std::thread on_interrupt(std::function<void()> on_signal) {
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    return std::thread([signals, on_signal = std::move(on_signal)] {
        int received = 0;
        sigwait(&signals, &received);
        on_signal();
    });
}

}  // namespace examples
