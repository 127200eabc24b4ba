// examples/rate_limit.cpp — a fixed-window rate limiter on KV: one counter key per client and
// window ("<client>.<window number>"), incremented with compare-and-set, so any number of
// instances sharing the limit allow at most --limit attempts per window between them. Each key is
// written with a TTL and deletes itself once its window is long over: nothing to clean up.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <thread>

#include "common.hpp"
#include "queen/client/client.hpp"

namespace {
constexpr const char* usage =
    "usage: example_rate_limit [--url http://127.0.0.1:6632] [--bucket ratelimit]\n"
    "                          [--client alice] [--limit 5] [--window-ms 1000]\n"
    "                          [--ttl-ms <2 x window>] [--attempts 20] [--interval-ms 50]\n";

struct Window {
    long allowed = 0;
    long denied = 0;
};
}  // namespace

int main(int argc, char** argv) {
    const auto flags = examples::parse_flags(argc, argv, usage);
    const queen::client::ClientOptions options = examples::client_options(flags);
    const std::string bucket = examples::flag(flags, "bucket", "ratelimit");
    const std::string name = examples::flag(flags, "client", "alice");
    const long limit = examples::number_flag(flags, "limit", 5);
    const long window_ms = examples::number_flag(flags, "window-ms", 1'000);
    const long ttl_ms = examples::number_flag(flags, "ttl-ms", 2 * window_ms);
    const long attempts = examples::number_flag(flags, "attempts", 20);
    const auto interval =
        std::chrono::milliseconds(examples::number_flag(flags, "interval-ms", 50));
    if (window_ms < 1 || ttl_ms < window_ms) {
        // A counter that expired within its window would let the window start over.
        std::fprintf(stderr, "--window-ms must be at least 1, --ttl-ms at least --window-ms\n%s",
                     usage);
        return 2;
    }
    queen::client::Client client{options};

    std::map<std::string, Window> windows;
    long conflicts = 0;
    for (long attempt = 0; attempt < attempts; ++attempt) {
        const auto now = std::chrono::system_clock::now().time_since_epoch();
        const std::string key =
            name + "." +
            std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(now).count() /
                           window_ms);
        bool is_allowed = false;
        for (;;) {
            std::uint64_t version = 0;  // absent: the first attempt of the window creates it
            std::int64_t count = 0;
            if (auto current = client.kv_get(bucket, key); current) {
                version = current->version;
                count = examples::json_integer(current->value_json, "count");
            } else if (queen::client::http_status_of(current.error()) != 404) {
                std::fprintf(stderr, "%s\n", current.error().message().c_str());
                return 1;
            }
            if (count >= limit) {
                break;  // the window is used up
            }
            queen::client::KvSet increment;
            increment.bucket = bucket;
            increment.key = key;
            increment.value_json = "{\"count\":" + std::to_string(count + 1) + "}";
            increment.expected_version = version;  // only if nobody counted since our read
            increment.ttl_ms = ttl_ms;
            auto written = client.kv_put(increment);
            if (written) {
                is_allowed = true;
                break;
            }
            if (!written.error().is(queen::client::Errc::conflict)) {
                std::fprintf(stderr, "%s\n", written.error().message().c_str());
                return 1;
            }
            ++conflicts;  // another instance counted first: read the new count and decide again
        }
        ++(is_allowed ? windows[key].allowed : windows[key].denied);
        std::this_thread::sleep_for(interval);
    }
    long allowed = 0;
    for (const auto& [key, window] : windows) {
        std::printf("window %s: %ld allowed, %ld denied\n", key.c_str(), window.allowed,
                    window.denied);
        allowed += window.allowed;
    }
    std::printf(
        "%ld attempts: %ld allowed, %ld denied in %zu windows (limit %ld per %ld ms), "
        "%ld conflicts\n",
        attempts, allowed, attempts - allowed, windows.size(), limit, window_ms, conflicts);
    return 0;
}
