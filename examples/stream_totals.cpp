// examples/stream_totals.cpp — the streams API: per-user totals per minute. Reads events
// {"user","ts","amount"} from --source, keys them by user, sums `amount` in tumbling one-minute
// windows of event time (`ts`, epoch ms; --lateness-ms of allowed lateness, later events
// dropped) and writes each closed window's total to --sink, printing it once its cycle
// committed. It stops once the source has been quiet for --quiet-ms and the windows left open
// have been flushed by the clock. Run it again after a crash: it resumes from the committed
// state, and no total is written twice.
#include <cstdio>
#include <string>

#include "common.hpp"
#include "queen/client/streams.hpp"

namespace {
constexpr const char* usage =
    "usage: example_stream_totals [--url http://127.0.0.1:6632] [--source clicks]\n"
    "                             [--sink user-totals] [--name user-totals]\n"
    "                             [--lateness-ms 0] [--quiet-ms 1000]\n";
}  // namespace

int main(int argc, char** argv) {
    using namespace queen::client;
    const auto flags = examples::parse_flags(argc, argv, usage);
    const std::string source = examples::flag(flags, "source", "clicks");
    const std::string sink = examples::flag(flags, "sink", "user-totals");
    const std::string name = examples::flag(flags, "name", "user-totals");
    const long lateness_ms = examples::number_flag(flags, "lateness-ms", 0);
    const long quiet_ms = examples::number_flag(flags, "quiet-ms", 1'000);
    Client client{examples::client_options(flags)};

    auto minute = WindowSpec::tumbling(std::chrono::minutes(1));
    minute.allowed_lateness_ms = lateness_ms;
    auto stream =
        Stream::from(source)
            .named(name)
            .key_by_field("user")
            .event_time_field("ts")
            .window(minute)
            .aggregate_field(Aggregation::sum(), "amount")
            .to_queue(sink)
            .for_each(
                [](const StreamOutput& output) {
                    const WindowResult& total = *output.window;
                    std::printf("total user=%s minute=%lld sum=%g events=%llu\n", total.key.c_str(),
                                static_cast<long long>(total.window_start_ms), total.value,
                                static_cast<unsigned long long>(total.count));
                },
                CallbackDelivery::after_commit);  // print what committed, once
    StreamRunnerOptions options;
    options.pop_timeout_ms = 250;
    options.idle_flush_ms = 0;  // flushed once at the end instead
    StreamRunner runner{client, stream, options};
    if (!examples::run_stream_until_quiet(runner, quiet_ms, options.pop_timeout_ms)) {
        return 1;
    }
    const auto metrics = runner.metrics();
    std::printf("stream %s: %llu messages, %llu totals, %llu dropped late, %llu cycles\n",
                name.c_str(), static_cast<unsigned long long>(metrics.messages),
                static_cast<unsigned long long>(metrics.emitted),
                static_cast<unsigned long long>(metrics.dropped),
                static_cast<unsigned long long>(metrics.cycles));
    return metrics.cycles_failed == 0 ? 0 : 1;
}
