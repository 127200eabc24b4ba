// examples/stream_sessions.cpp — the streams API: user sessions. Reads page views
// {"user","ts"} from --source; a user's views that follow each other by less than --gap-ms
// (event time, `ts` in epoch ms) form one session window [first view, last view + gap), counted.
// Each closed session goes to --sink as {"key","windowStart","windowEnd","count",...} and is
// printed once its cycle committed. Stops once the source has been quiet for --quiet-ms and the
// sessions left open have been flushed by the clock.
#include <cstdio>
#include <string>

#include "common.hpp"
#include "queen/client/streams.hpp"

namespace {
constexpr const char* usage =
    "usage: example_stream_sessions [--url http://127.0.0.1:6632] [--source views]\n"
    "                               [--sink sessions] [--name sessions] [--gap-ms 30000]\n"
    "                               [--quiet-ms 1000]\n";
}  // namespace

int main(int argc, char** argv) {
    using namespace queen::client;
    const auto flags = examples::parse_flags(argc, argv, usage);
    const std::string source = examples::flag(flags, "source", "views");
    const std::string sink = examples::flag(flags, "sink", "sessions");
    const std::string name = examples::flag(flags, "name", "sessions");
    const long gap_ms = examples::number_flag(flags, "gap-ms", 30'000);
    const long quiet_ms = examples::number_flag(flags, "quiet-ms", 1'000);
    if (gap_ms < 1) {
        std::fprintf(stderr, "--gap-ms must be at least 1\n%s", usage);
        return 2;
    }
    Client client{examples::client_options(flags)};

    auto stream = Stream::from(source)
                      .named(name)
                      .key_by_field("user")
                      .event_time_field("ts")
                      .window(WindowSpec::session(std::chrono::milliseconds(gap_ms)))
                      .aggregate(Aggregation::count())
                      .to_queue(sink)
                      .for_each(
                          [](const StreamOutput& output) {
                              const WindowResult& session = *output.window;
                              std::printf("session user=%s start=%lld end=%lld views=%llu\n",
                                          session.key.c_str(),
                                          static_cast<long long>(session.window_start_ms),
                                          static_cast<long long>(session.window_end_ms),
                                          static_cast<unsigned long long>(session.count));
                          },
                          CallbackDelivery::after_commit);
    StreamRunnerOptions options;
    options.pop_timeout_ms = 250;
    options.idle_flush_ms = 0;
    StreamRunner runner{client, stream, options};
    if (!examples::run_stream_until_quiet(runner, quiet_ms, options.pop_timeout_ms)) {
        return 1;
    }
    const auto metrics = runner.metrics();
    std::printf("stream %s: %llu views, %llu sessions, %llu cycles\n", name.c_str(),
                static_cast<unsigned long long>(metrics.messages),
                static_cast<unsigned long long>(metrics.emitted),
                static_cast<unsigned long long>(metrics.cycles));
    return metrics.cycles_failed == 0 ? 0 : 1;
}
