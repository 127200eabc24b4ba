// bench/src/workload.cpp — producer, consumer and transaction loops over the client, and the
// phases of each workload. Time comes from the injected clock; threads never sleep.
#include "queen/bench/workload.hpp"

#include <algorithm>
#include <charconv>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "queen/bench/pacer.hpp"
#include "queen/core/assert.hpp"

namespace queen::bench {
namespace {

using client::Ack;
using client::PopRequest;
using client::PushItem;
using client::PushStatus;

constexpr auto relaxed = std::memory_order_relaxed;
constexpr std::uint64_t tracked_messages_max = 100'000'000;  // bitmap bound: 2 x 100 MB

queen::Error invalid(std::string what) {
    return queen::Error{queen::Errc::invalid_argument, std::move(what)};
}

std::int64_t seconds_to_ns(double seconds) {
    return static_cast<std::int64_t>(seconds * 1e9);
}

/// State shared by the threads of one run.
struct Run {
    Run(client::Client& c, const WorkloadOptions& o, const queen::Clock& k, Progress& p)
        : client(c), options(o), clock(k), progress(p) {}

    client::Client& client;
    const WorkloadOptions& options;
    const queen::Clock& clock;
    Progress& progress;
    std::uint64_t target = 0;  // messages to produce; 0: until the deadline
    std::atomic<std::uint64_t> next_sequence{0};
    std::atomic<std::uint64_t> bytes_produced{0};
    std::atomic<std::uint64_t> bytes_consumed{0};
    std::atomic<std::uint64_t> duplicates{0};
    std::atomic<std::uint64_t> transactions{0};
    std::atomic<std::uint64_t> transactions_claimed{0};  // a worker claims one before committing
    std::atomic<std::uint64_t> empty_pops{0};            // pops answered 204 (nothing delivered)
    std::atomic<bool> is_producing_over{false};
    std::atomic<std::int64_t> last_delivery_ns{0};
    // One flag per sequence number when the count is bounded: produced, then consumed.
    std::unique_ptr<std::atomic<std::uint8_t>[]> produced_flags;
    std::unique_ptr<std::atomic<std::uint8_t>[]> consumed_flags;
    std::string partition_prefix = "p";
    Pacer pacer{0, 0};                                    // set when the measured phase starts
    std::atomic<std::int64_t> behind_schedule_ns_max{0};  // latest send after its due time

    bool is_stopping() const {
        return progress.is_stop_requested.load(relaxed) ||
               progress.errors.load(relaxed) >= options.errors_max;
    }
    void count_error(std::uint64_t n = 1) { progress.errors.fetch_add(n, relaxed); }
    void track(std::uint64_t count) {
        target = count;
        if (count == 0 || count > tracked_messages_max) {
            return;
        }
        produced_flags = std::make_unique<std::atomic<std::uint8_t>[]>(count);
        consumed_flags = std::make_unique<std::atomic<std::uint8_t>[]>(count);
    }
};

/// Sets `out` to the partition of message `sequence` ("p<sequence mod partitions>"), reusing its
/// storage.
void assign_partition_name(const Run& run, std::uint64_t sequence, std::string& out) {
    const auto partitions = static_cast<std::uint64_t>(run.options.partitions);
    char digits[24];
    const auto [end, ec] = std::to_chars(digits, digits + sizeof digits, sequence % partitions);
    QUEEN_ASSERT(ec == std::errc{}, "a 64-bit number fits in 24 digits");
    out.assign(run.partition_prefix).append(digits, end);
}

/// Waits until `due_ns` in slices of at most 100 ms, so a stop request is seen within one slice.
void wait_until_due(Run& run, std::int64_t due_ns) {
    constexpr std::int64_t slice_ns = 100'000'000;
    for (std::int64_t now_ns = run.clock.monotonic_ns(); now_ns < due_ns && !run.is_stopping();
         now_ns = run.clock.monotonic_ns()) {
        run.options.wait_until_ns(std::min(due_ns, now_ns + slice_ns));
    }
}

void raise_to(std::atomic<std::int64_t>& maximum, std::int64_t value) {
    std::int64_t seen = maximum.load(relaxed);
    while (value > seen && !maximum.compare_exchange_weak(seen, value, relaxed)) {
    }
}

/// Pushes batches until the target count or `deadline_ns`; one latency sample per push. Paced,
/// each batch waits for its due time and carries it as its stamp (see Pacer).
void produce_loop(Run& run, std::int64_t deadline_ns, Histogram& latency) {
    const auto batch = static_cast<std::uint64_t>(run.options.batch);
    std::vector<PushItem> items;
    items.reserve(batch);
    std::vector<client::PushResult> pushed;  // reused: push_into keeps its storage
    while (!run.is_stopping() && run.clock.monotonic_ns() < deadline_ns) {
        const std::uint64_t first = run.next_sequence.fetch_add(batch, relaxed);
        if (run.target != 0 && first >= run.target) {
            break;
        }
        const std::uint64_t count = run.target == 0 ? batch : std::min(batch, run.target - first);
        std::int64_t stamp_ns = 0;
        if (run.pacer.is_paced()) {
            stamp_ns = run.pacer.due_ns(first);
            if (stamp_ns >= deadline_ns) {
                break;  // due after the end of the run: never sent
            }
            wait_until_due(run, stamp_ns);
            if (run.is_stopping()) {
                break;
            }
            raise_to(run.behind_schedule_ns_max, run.clock.monotonic_ns() - stamp_ns);
        }
        items.resize(count);
        const std::int64_t start_ns = run.clock.monotonic_ns();
        if (!run.pacer.is_paced()) {
            stamp_ns = start_ns;
        }
        std::uint64_t bytes = 0;
        for (std::uint64_t i = 0; i < count; ++i) {
            PushItem& item = items[i];
            // Assignments into the reused items keep their strings' storage: no allocation per
            // message once the first batch went out.
            item.queue = run.options.queue;
            assign_partition_name(run, first + i, item.partition);
            item.payload_json.clear();
            append_payload(item.payload_json, first + i, stamp_ns, run.options.size_bytes);
            item.transaction_id.clear();
            bytes += item.payload_json.size();
        }
        const queen::Status is_pushed = run.client.push_into(items, pushed);
        latency.record(run.clock.monotonic_ns() - stamp_ns);
        if (!is_pushed) {
            run.count_error();
            continue;
        }
        std::uint64_t queued = 0;
        for (std::size_t i = 0; i < pushed.size() && i < count; ++i) {
            const PushStatus status = pushed[i].status;
            if (status == PushStatus::queued || status == PushStatus::duplicate) {
                ++queued;
                if (run.produced_flags) {
                    run.produced_flags[first + i].store(1, relaxed);
                }
            } else {
                run.count_error();
            }
        }
        run.bytes_produced.fetch_add(bytes / count * queued, relaxed);
        run.progress.produced.fetch_add(queued, relaxed);
    }
}

/// Sets `ack` to the completion of `message` (Ack::of), reusing the ack's storage.
void assign_ack(const client::Message& message, Ack& ack) {
    ack.transaction_id = message.transaction_id;
    ack.partition_id = message.partition_id;
    ack.status = client::AckStatus::completed;
    ack.error.clear();
    ack.lease_id = message.lease_id;
    ack.consumer_group = message.consumer_group;
}

/// Pops and acks until producing is over and everything produced was consumed (or nothing came
/// for drain_idle_ms), or `deadline_ns`. Latency: pop + ack, or payload stamp to delivery.
void consume_loop(Run& run, std::int64_t deadline_ns, bool is_e2e_latency, Histogram& latency) {
    PopRequest request;
    request.queue = run.options.queue;
    request.batch = run.options.batch;
    request.is_wait = true;
    request.timeout_ms = run.options.pop_wait_ms;
    request.partitions = run.options.pop_partitions;
    request.consumer_group = run.options.consumer_group;
    std::vector<Ack> acks;
    client::PopResult popped;  // reused: pop_into keeps its messages' storage
    while (!run.is_stopping() && run.clock.monotonic_ns() < deadline_ns) {
        if (run.is_producing_over.load()) {
            const std::uint64_t produced = run.progress.produced.load();
            if (run.progress.consumed.load() >= produced) {
                break;
            }
            const std::int64_t idle_ns =
                run.clock.monotonic_ns() - run.last_delivery_ns.load(relaxed);
            if (idle_ns > run.options.drain_idle_ms * 1'000'000) {
                break;
            }
        }
        const std::int64_t start_ns = run.clock.monotonic_ns();
        if (!run.client.pop_into(request, popped)) {
            run.count_error();
            continue;
        }
        if (popped.messages.empty()) {
            run.empty_pops.fetch_add(1, relaxed);
            continue;
        }
        const std::int64_t delivered_ns = run.clock.monotonic_ns();
        run.last_delivery_ns.store(delivered_ns, relaxed);
        acks.resize(popped.messages.size());
        std::uint64_t bytes = 0;
        for (std::size_t m = 0; m < popped.messages.size(); ++m) {
            const client::Message& message = popped.messages[m];
            assign_ack(message, acks[m]);
            bytes += message.data_json.size();
            PayloadStamp stamp;
            if (!parse_payload(message.data_json, stamp)) {
                run.count_error();
                continue;
            }
            if (is_e2e_latency) {
                latency.record(delivered_ns - stamp.timestamp_ns);
            }
            if (run.consumed_flags && stamp.sequence < run.target &&
                run.consumed_flags[stamp.sequence].exchange(1) != 0) {
                run.duplicates.fetch_add(1, relaxed);
            }
        }
        auto acked = run.client.ack_batch(acks, popped.consumer_group);
        if (!is_e2e_latency) {
            latency.record(run.clock.monotonic_ns() - start_ns);
        }
        if (!acked) {
            run.count_error();
            continue;
        }
        std::uint64_t successes = 0;
        for (const client::AckResult& result : *acked) {
            successes += result.is_success ? 1 : 0;
        }
        run.count_error(acked->size() - successes);
        run.bytes_consumed.fetch_add(bytes / acks.size() * successes, relaxed);
        run.progress.consumed.fetch_add(successes, relaxed);
    }
}

/// One transaction worker on its own partition: pop a batch, then ack it and push the next batch
/// in one transaction.
void transaction_loop(Run& run, std::int64_t worker, std::int64_t deadline_ns, Histogram& latency) {
    PopRequest request;
    request.queue = run.options.queue;
    request.partition = "t" + std::to_string(worker);
    request.batch = run.options.batch;
    request.is_wait = true;
    request.timeout_ms = run.options.pop_wait_ms;
    client::PopResult popped;  // reused: pop_into keeps its messages' storage
    while (!run.is_stopping() && run.clock.monotonic_ns() < deadline_ns) {
        if (run.target != 0 && run.transactions_claimed.load(relaxed) >= run.target) {
            break;
        }
        const std::int64_t start_ns = run.clock.monotonic_ns();
        if (!run.client.pop_into(request, popped)) {
            run.count_error();
            continue;
        }
        if (popped.messages.empty()) {
            run.empty_pops.fetch_add(1, relaxed);
            continue;  // a lease still held (a retried pop): it comes back after its expiry
        }
        // Claiming after the pop (not before) keeps the count exact however many workers run:
        // exactly `target` transactions are attempted, and an empty pop claims nothing.
        if (run.target != 0 && run.transactions_claimed.fetch_add(1, relaxed) >= run.target) {
            break;  // the popped batch stays leased, as a crashed worker's would
        }
        client::TransactionRequest transaction;
        client::TransactionPush push;
        std::uint64_t bytes = 0;
        for (const client::Message& message : popped.messages) {
            transaction.operations.emplace_back(Ack::of(message));
            PushItem item;
            item.queue = run.options.queue;
            item.partition = request.partition;
            item.payload_json = make_payload(run.next_sequence.fetch_add(1, relaxed), start_ns,
                                             run.options.size_bytes);
            item.transaction_id = run.client.generate_uuid_v7();
            bytes += item.payload_json.size();
            push.items.push_back(std::move(item));
        }
        const std::uint64_t moved = push.items.size();
        transaction.operations.emplace_back(std::move(push));
        auto committed = run.client.transaction(transaction);
        latency.record(run.clock.monotonic_ns() - start_ns);
        if (!committed) {
            run.count_error();
            continue;
        }
        run.transactions.fetch_add(1, relaxed);
        run.bytes_consumed.fetch_add(bytes, relaxed);
        run.progress.consumed.fetch_add(moved, relaxed);
        run.progress.produced.fetch_add(moved, relaxed);
    }
}

/// Starts `count` threads running `body(index, histogram)` and joins them; returns the merged
/// histogram.
template <class Body>
Histogram run_threads(std::int64_t count, Body body) {
    std::vector<Histogram> histograms(static_cast<std::size_t>(count));
    std::vector<std::thread> threads;
    threads.reserve(histograms.size());
    for (std::int64_t i = 0; i < count; ++i) {
        threads.emplace_back(
            [&body, &histograms, i] { body(i, histograms[static_cast<std::size_t>(i)]); });
    }
    for (std::thread& thread : threads) {
        thread.join();
    }
    Histogram merged;
    for (const Histogram& h : histograms) {
        merged.merge(h);
    }
    return merged;
}

queen::Result<void> reset_queue(Run& run) {
    if (run.options.is_queue_reset) {
        auto deleted = run.client.delete_queue(run.options.queue);
        if (!deleted && client::http_status_of(deleted.error()) != 404) {
            return deleted.error();
        }
    }
    client::ConfigureRequest configure;
    configure.queue = run.options.queue;
    configure.options.lease_time_s = 60;
    configure.options.retry_limit = 100;
    configure.options.ttl_s = 0;
    auto configured = run.client.configure(configure);
    if (!configured) {
        return configured.error();
    }
    return {};
}

double elapsed_s(std::int64_t start_ns, std::int64_t end_ns) {
    return static_cast<double>(std::max<std::int64_t>(end_ns - start_ns, 0)) / 1e9;
}

std::int64_t sample_rss(const WorkloadOptions& options) {
    return options.server_rss_bytes ? options.server_rss_bytes() : -1;
}

/// Fills the queue with run.target messages using the producer threads; returns the fill rate.
double fill(Run& run, std::int64_t deadline_ns) {
    run.progress.phase.store("fill");
    const std::int64_t start_ns = run.clock.monotonic_ns();
    (void)run_threads(run.options.producers, [&run, deadline_ns](std::int64_t, Histogram& h) {
        produce_loop(run, deadline_ns, h);
    });
    run.is_producing_over.store(true);
    return static_cast<double>(run.progress.produced.load()) /
           std::max(elapsed_s(start_ns, run.clock.monotonic_ns()), 1e-9);
}

/// Counts produced messages that were never consumed (bounded runs only).
std::uint64_t count_missing(const Run& run) {
    if (!run.produced_flags) {
        return 0;
    }
    std::uint64_t missing = 0;
    for (std::uint64_t i = 0; i < run.target; ++i) {
        missing += run.produced_flags[i].load() != 0 && run.consumed_flags[i].load() == 0 ? 1 : 0;
    }
    return missing;
}

/// Drains with the consumer threads; fills elapsed, consumed and latency of `report`.
void drain(Run& run, std::int64_t deadline_ns, Report& report) {
    run.progress.phase.store("drain");
    run.last_delivery_ns.store(run.clock.monotonic_ns());
    const std::int64_t start_ns = run.clock.monotonic_ns();
    report.latency_ns =
        run_threads(run.options.consumers, [&run, deadline_ns](std::int64_t, Histogram& h) {
            consume_loop(run, deadline_ns, false, h);
        });
    report.elapsed_s = elapsed_s(start_ns, run.last_delivery_ns.load());
    report.consumed = run.progress.consumed.load();
    report.messages = report.consumed;
    report.bytes = run.bytes_consumed.load();
    report.missing = count_missing(run);
    report.duplicates = run.duplicates.load();
}

/// The target rate, and how far behind schedule the producers fell (paced runs only).
void add_pacing_metrics(const Run& run, Report& report) {
    if (!run.pacer.is_paced()) {
        return;
    }
    report.target_msgs_per_s = run.pacer.rate_msgs_per_s();
    report.metrics.push_back(
        {"behind_schedule_ms_max", static_cast<double>(run.behind_schedule_ns_max.load()) / 1e6});
}

Report run_produce(Run& run, std::int64_t deadline_ns) {
    Report report;
    report.latency_of =
        run.options.rate_msgs_per_s > 0 ? "push request, from its due time" : "push request";
    run.progress.phase.store("run");
    const std::int64_t start_ns = run.clock.monotonic_ns();
    run.pacer = Pacer{run.options.rate_msgs_per_s, start_ns};
    report.latency_ns = run_threads(
        run.options.producers,
        [&run, deadline_ns](std::int64_t, Histogram& h) { produce_loop(run, deadline_ns, h); });
    report.elapsed_s = elapsed_s(start_ns, run.clock.monotonic_ns());
    report.produced = run.progress.produced.load();
    report.messages = report.produced;
    report.bytes = run.bytes_produced.load();
    report.produce_msgs_per_s = report.msgs_per_s();
    add_pacing_metrics(run, report);
    return report;
}

Report run_consume(Run& run, std::int64_t bound_ns) {
    const double fill_rate = fill(run, run.clock.monotonic_ns() + bound_ns);
    Report report;
    report.latency_of = "pop + ack";
    drain(run, run.clock.monotonic_ns() + bound_ns, report);
    report.produced = run.progress.produced.load();
    report.metrics.push_back({"fill_msgs_per_s", fill_rate});
    return report;
}

Report run_e2e(Run& run, std::int64_t produce_deadline_ns, std::int64_t bound_ns) {
    Report report;
    report.latency_of = run.options.rate_msgs_per_s > 0
                            ? "due time (payload stamp) to delivery"
                            : "payload timestamp to delivery; unpaced, so it includes the "
                              "backlog producers build ahead of consumers (see --rate)";
    run.progress.phase.store("run");
    const std::int64_t start_ns = run.clock.monotonic_ns();
    run.pacer = Pacer{run.options.rate_msgs_per_s, start_ns};
    run.last_delivery_ns.store(start_ns);
    std::int64_t produce_end_ns = start_ns;
    std::uint64_t consumed_at_produce_end = 0;
    std::thread producers([&] {
        (void)run_threads(run.options.producers,
                          [&run, produce_deadline_ns](std::int64_t, Histogram& h) {
                              produce_loop(run, produce_deadline_ns, h);
                          });
        produce_end_ns = run.clock.monotonic_ns();
        consumed_at_produce_end = run.progress.consumed.load();
        run.is_producing_over.store(true);
    });
    const std::int64_t consume_deadline_ns = produce_deadline_ns + bound_ns;
    report.latency_ns =
        run_threads(run.options.consumers, [&run, consume_deadline_ns](std::int64_t, Histogram& h) {
            consume_loop(run, consume_deadline_ns, true, h);
        });
    producers.join();
    report.elapsed_s = elapsed_s(start_ns, std::max(run.last_delivery_ns.load(), produce_end_ns));
    report.produced = run.progress.produced.load();
    report.consumed = run.progress.consumed.load();
    report.messages = report.consumed;
    report.bytes = run.bytes_consumed.load();
    report.missing = count_missing(run);
    report.duplicates = run.duplicates.load();
    report.produce_msgs_per_s =
        static_cast<double>(report.produced) / std::max(elapsed_s(start_ns, produce_end_ns), 1e-9);
    report.metrics.push_back({"produce_msgs_per_s", report.produce_msgs_per_s});
    // How far consumers trailed when the producers stopped, and how long they took to catch up.
    const std::uint64_t lag_msgs =
        report.produced > consumed_at_produce_end ? report.produced - consumed_at_produce_end : 0;
    report.metrics.push_back({"consumer_lag_msgs_at_produce_end", static_cast<double>(lag_msgs)});
    report.metrics.push_back(
        {"drain_after_produce_s",
         elapsed_s(produce_end_ns, std::max(run.last_delivery_ns.load(), produce_end_ns))});
    add_pacing_metrics(run, report);
    return report;
}

queen::Result<Report> run_transaction(Run& run, std::int64_t deadline_ns) {
    // Seed each worker's partition with one batch; the loop then keeps it at one batch.
    // Pushes of up to seed_push_items_max items keep the request small with many workers.
    constexpr std::size_t seed_push_items_max = 1'000;
    run.progress.phase.store("fill");
    std::vector<PushItem> items;
    const auto flush = [&run, &items]() -> queen::Result<void> {
        auto pushed = run.client.push(items);
        if (!pushed) {
            return pushed.error();
        }
        for (const client::PushResult& result : *pushed) {
            if (result.status != PushStatus::queued) {
                return queen::Error{queen::Errc::invalid_argument,
                                    "transaction seed push: " + result.error};
            }
        }
        items.clear();
        return {};
    };
    for (std::int64_t worker = 0; worker < run.options.consumers; ++worker) {
        for (std::int64_t i = 0; i < run.options.batch; ++i) {
            PushItem& item = items.emplace_back();
            item.queue = run.options.queue;
            item.partition = "t" + std::to_string(worker);
            item.payload_json = make_payload(run.next_sequence.fetch_add(1, relaxed),
                                             run.clock.monotonic_ns(), run.options.size_bytes);
            if (items.size() == seed_push_items_max) {
                QUEEN_TRY(flush());
            }
        }
    }
    if (!items.empty()) {
        QUEEN_TRY(flush());
    }
    Report report;
    report.latency_of = "pop + transaction (ack and push)";
    run.progress.phase.store("run");
    const std::int64_t start_ns = run.clock.monotonic_ns();
    report.latency_ns =
        run_threads(run.options.consumers, [&run, deadline_ns](std::int64_t worker, Histogram& h) {
            transaction_loop(run, worker, deadline_ns, h);
        });
    report.elapsed_s = elapsed_s(start_ns, run.clock.monotonic_ns());
    report.produced = run.progress.produced.load();
    report.consumed = run.progress.consumed.load();
    report.messages = report.consumed;
    report.bytes = run.bytes_consumed.load();
    const auto transactions = static_cast<double>(run.transactions.load());
    report.metrics.push_back({"transactions", transactions});
    report.metrics.push_back(
        {"transactions_per_s", report.elapsed_s > 0 ? transactions / report.elapsed_s : 0.0});
    return report;
}

Report run_partitions(Run& run, std::int64_t bound_ns) {
    const std::int64_t rss_before_bytes = sample_rss(run.options);
    const double fill_rate = fill(run, run.clock.monotonic_ns() + bound_ns);
    const std::int64_t rss_filled_bytes = sample_rss(run.options);
    Report report;
    report.latency_of = "pop + ack";
    drain(run, run.clock.monotonic_ns() + bound_ns, report);
    report.produced = run.progress.produced.load();
    report.metrics.push_back({"fill_msgs_per_s", fill_rate});
    report.metrics.push_back(
        {"server_rss_before_fill_bytes", static_cast<double>(rss_before_bytes)});
    report.metrics.push_back(
        {"server_rss_after_fill_bytes", static_cast<double>(rss_filled_bytes)});
    report.metrics.push_back(
        {"server_rss_after_drain_bytes", static_cast<double>(sample_rss(run.options))});
    return report;
}

}  // namespace

std::string_view to_string(Workload workload) noexcept {
    switch (workload) {
        case Workload::produce: return "produce";
        case Workload::consume: return "consume";
        case Workload::e2e: return "e2e";
        case Workload::transaction: return "transaction";
        case Workload::partitions: return "partitions";
    }
    QUEEN_UNREACHABLE();
}

queen::Result<Workload> parse_workload(std::string_view name) {
    for (const Workload w : {Workload::produce, Workload::consume, Workload::e2e,
                             Workload::transaction, Workload::partitions}) {
        if (to_string(w) == name) {
            return w;
        }
    }
    return invalid("unknown workload '" + std::string(name) +
                   "' (produce, consume, e2e, transaction, partitions)");
}

queen::Result<void> WorkloadOptions::validate() const {
    if (queue.empty()) {
        return invalid("queue is empty");
    }
    if (producers < 1 || producers > 4096) {
        return invalid("producers must be in [1, 4096]");
    }
    if (consumers < 1 || consumers > 4096) {
        return invalid("consumers must be in [1, 4096]");
    }
    if (batch < 1 || batch > 10'000) {
        return invalid("batch must be in [1, 10000]");
    }
    if (size_bytes < 1 || size_bytes > (16 << 20)) {
        return invalid("size must be in [1, 16 MiB]");
    }
    if (partitions < 1 || partitions > 10'000'000) {
        return invalid("partitions must be in [1, 10000000]");
    }
    if (pop_partitions < 1 || pop_partitions > 10'000) {
        return invalid("pop partitions must be in [1, 10000]");
    }
    if (!(duration_s > 0) || duration_s > 86'400) {
        return invalid("duration must be in (0, 86400] seconds");
    }
    if (!(rate_msgs_per_s >= 0) || rate_msgs_per_s > 1e9) {
        return invalid("rate must be in [0, 1e9] messages per second");
    }
    if (rate_msgs_per_s > 0 && workload != Workload::produce && workload != Workload::e2e) {
        return invalid("a rate applies to the produce and e2e workloads only");
    }
    if (drain_idle_ms < 0 || pop_wait_ms < 0) {
        return invalid("drain_idle_ms and pop_wait_ms must not be negative");
    }
    return {};
}

queen::Result<Report> run_workload(client::Client& client, const WorkloadOptions& options,
                                   const queen::Clock& clock, Progress& progress) {
    QUEEN_TRY(options.validate());
    if (options.rate_msgs_per_s > 0 && !options.wait_until_ns) {
        return invalid("a paced run needs wait_until_ns");
    }
    Run run{client, options, clock, progress};
    std::uint64_t count = options.messages;
    if (options.workload == Workload::partitions) {
        count = static_cast<std::uint64_t>(options.partitions);
    } else if (options.workload == Workload::consume && count == 0) {
        count = 100'000;
    }
    if (options.workload == Workload::transaction) {
        run.target = count;  // transactions, not sequence numbers
    } else {
        run.track(count);
    }
    progress.phase.store("setup");
    QUEEN_TRY(reset_queue(run));
    const std::int64_t bound_ns = seconds_to_ns(options.duration_s);
    const std::int64_t deadline_ns = clock.monotonic_ns() + bound_ns;
    Report report;
    switch (options.workload) {
        case Workload::produce: report = run_produce(run, deadline_ns); break;
        case Workload::consume: report = run_consume(run, bound_ns); break;
        case Workload::e2e: report = run_e2e(run, deadline_ns, bound_ns); break;
        case Workload::transaction: {
            QUEEN_TRY(report, run_transaction(run, deadline_ns));
            break;
        }
        case Workload::partitions: report = run_partitions(run, bound_ns); break;
    }
    progress.phase.store("done");
    if (options.workload != Workload::produce) {
        report.metrics.push_back({"empty_pops", static_cast<double>(run.empty_pops.load())});
    }
    report.workload = std::string(to_string(options.workload));
    report.errors = progress.errors.load();
    Conditions& c = report.conditions;
    c.batch = options.batch;
    c.size_bytes = options.size_bytes;
    c.partitions = options.partitions;
    c.producers = options.workload == Workload::transaction ? 0 : options.producers;
    c.consumers = options.workload == Workload::produce ? 0 : options.consumers;
    return report;
}

std::string make_payload(std::uint64_t sequence, std::int64_t timestamp_ns,
                         std::int64_t size_bytes) {
    std::string out;
    append_payload(out, sequence, timestamp_ns, size_bytes);
    return out;
}

void append_payload(std::string& out, std::uint64_t sequence, std::int64_t timestamp_ns,
                    std::int64_t size_bytes) {
    const std::size_t begin = out.size();
    char digits[24];
    out += "{\"seq\":";
    // 24 digits hold any 64-bit number, so to_chars cannot fail here.
    out.append(digits, std::to_chars(digits, digits + sizeof digits, sequence).ptr);
    out += ",\"ts\":";
    out.append(digits, std::to_chars(digits, digits + sizeof digits, timestamp_ns).ptr);
    out += ",\"pad\":\"";
    const std::size_t fixed_size = out.size() - begin + 2;  // plus the closing "}
    const auto size = static_cast<std::size_t>(std::max<std::int64_t>(size_bytes, 0));
    out.append(size > fixed_size ? size - fixed_size : 0, 'x');
    out += "\"}";
}

namespace {
bool read_field(std::string_view json, std::string_view key, std::int64_t& value) noexcept {
    const std::size_t at = json.find(key);
    if (at == std::string_view::npos) {
        return false;
    }
    std::size_t i = at + key.size();
    while (i < json.size() && (json[i] == ' ' || json[i] == ':' || json[i] == '\t')) {
        ++i;
    }
    const char* begin = json.data() + i;
    const char* end = json.data() + json.size();
    const auto [ptr, ec] = std::from_chars(begin, end, value);
    return ec == std::errc{} && ptr != begin;
}
}  // namespace

bool parse_payload(std::string_view json, PayloadStamp& stamp) noexcept {
    std::int64_t sequence = 0;
    std::int64_t timestamp_ns = 0;
    if (!read_field(json, "\"seq\"", sequence) || sequence < 0 ||
        !read_field(json, "\"ts\"", timestamp_ns)) {
        return false;
    }
    stamp.sequence = static_cast<std::uint64_t>(sequence);
    stamp.timestamp_ns = timestamp_ns;
    return true;
}

}  // namespace queen::bench
