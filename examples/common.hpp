// examples/common.hpp — flag parsing and Ctrl-C handling shared by the examples (not SDK code).
#pragma once

#include <pthread.h>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <thread>

#include "queen/client/client.hpp"
#include "queen/client/streams.hpp"
#include "queen/core/json_scan.hpp"

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

/// The client options for `--url` (default: the broker of `make serve`); a malformed URL exits 2.
inline queen::client::ClientOptions client_options(
    const std::map<std::string, std::string>& flags) {
    auto endpoint = queen::client::parse_url(flag(flags, "url", "http://127.0.0.1:6632"));
    if (!endpoint) {
        std::fprintf(stderr, "%s\n", endpoint.error().message().c_str());
        std::exit(2);
    }
    queen::client::ClientOptions options;
    options.endpoint = *endpoint;
    return options;
}

/// Member `name` of the JSON object `object` (payloads and stored values come from the SDK as
/// JSON text; the scanner the SDK reads its answers with reads them): a string decoded, any
/// other value as its JSON text, "" when absent or when `object` is not an object.
inline std::string json_member(std::string_view object, std::string_view name) {
    std::string found;
    queen::json::for_each_member(object, [&](std::string_view key, std::string_view raw) {
        if (key != name) {
            return true;
        }
        found = queen::json::raw_to_text(raw);
        return false;  // found: stop the walk
    });
    return found;
}

/// An integer member of a JSON object, or `fallback` when it is absent or not an integer.
inline std::int64_t json_integer(std::string_view object, std::string_view name,
                                 std::int64_t fallback = 0) {
    const std::string text = json_member(object, name);
    char* end = nullptr;
    const long long value = std::strtoll(text.c_str(), &end, 10);
    return text.empty() || *end != '\0' ? fallback : value;
}

/// Microseconds since the epoch of a time as the API writes it ("2026-12-03T10:00:01.067Z",
/// messages' createdAt with six fraction digits), or -1 when `text` is not one.
inline std::int64_t iso_to_us(const std::string& text) {
    std::tm parts{};
    int consumed = 0;
    if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &parts.tm_year, &parts.tm_mon,
                    &parts.tm_mday, &parts.tm_hour, &parts.tm_min, &parts.tm_sec, &consumed) != 6) {
        return -1;
    }
    parts.tm_year -= 1900;
    parts.tm_mon -= 1;
    std::int64_t fraction_us = 0;
    std::size_t at = static_cast<std::size_t>(consumed);
    if (at < text.size() && text[at] == '.') {
        std::int64_t scale = 100'000;
        for (++at; at < text.size() && text[at] >= '0' && text[at] <= '9'; ++at, scale /= 10) {
            fraction_us += (text[at] - '0') * scale;
        }
    }
    return static_cast<std::int64_t>(timegm(&parts)) * 1'000'000 + fraction_us;
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

/// Runs a stream runner until its source has been quiet for `quiet_ms` (empty long polls of
/// `runner`'s pop_timeout_ms in a row), then flushes its windows by the clock (the windows of
/// past event times all close). Prints the error and returns false when a step fails.
inline bool run_stream_until_quiet(queen::client::StreamRunner& runner, std::int64_t quiet_ms,
                                   std::int64_t poll_ms) {
    std::int64_t quiet = 0;
    while (quiet < quiet_ms) {
        auto stepped = runner.step();
        if (!stepped) {
            std::fprintf(stderr, "%s\n", stepped.error().message().c_str());
            return false;
        }
        quiet = *stepped == 0 ? quiet + poll_ms : 0;
    }
    if (auto flushed = runner.flush_idle(); !flushed) {
        std::fprintf(stderr, "%s\n", flushed.error().message().c_str());
        return false;
    }
    return true;
}

}  // namespace examples
