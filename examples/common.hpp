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
/// `--help` prints `usage` and exits 0; a malformed command line prints it and exits 2.
inline std::map<std::string, std::string> parse_flags(int argc, char** argv, const char* usage) {
    std::map<std::string, std::string> flags;
    for (int i = 1; i < argc; i += 2) {
        const std::string name = argv[i];
        if (name == "--help" || name == "-h") {
            std::printf("%s", usage);
            std::exit(0);
        }
        if (name.rfind("--", 0) != 0 || i + 1 >= argc) {
            std::fprintf(stderr, "expected --name value pairs, got '%s'\n%s", argv[i], usage);
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

/// A non-negative integer flag; anything else exits 2.
inline long number_flag(const std::map<std::string, std::string>& flags, const std::string& name,
                        long fallback) {
    const auto found = flags.find(name);
    if (found == flags.end()) {
        return fallback;
    }
    char* end = nullptr;
    const long value = std::strtol(found->second.c_str(), &end, 10);
    if (found->second.empty() || *end != '\0' || value < 0) {
        std::fprintf(stderr, "--%s wants a non-negative integer, got '%s'\n", name.c_str(),
                     found->second.c_str());
        std::exit(2);
    }
    return value;
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
