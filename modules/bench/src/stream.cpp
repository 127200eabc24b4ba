// bench/src/stream.cpp — the stream workload: producers push user events (agents on the event
// loop, each partition one producer's so its event times never go back) while StreamRunners (a
// thread and a client each: the runner is synchronous) aggregate them per user in tumbling
// windows; then the drain, and the check: the query's lag, and with verify the window counts.
#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "queen/client/streams.hpp"
#include "run.hpp"

namespace queen::bench::detail {
namespace {

using nlohmann::json;

/// The names a stream run uses, all derived from its source queue.
struct StreamNames {
    std::string query;   // the query's name, also its sink queue
    std::string group;   // the runners' consumer group (the SDK's default)
    std::string target;  // the admin route of the query
};

StreamNames names_of(const WorkloadOptions& options) {
    StreamNames names;
    names.query = options.queue + "-windows";
    names.group = "streams." + names.query;
    names.target = "/api/v1/streams/queries/" + client::percent_encode(names.query);
    return names;
}

/// Pushes batches of events, each batch to one of this producer's partitions in turn, until the
/// count or `deadline_ns`; one latency sample per push. Paced like ProducerAgent (the run's
/// Pacer over the global sequence), without stamping the due time into the events: their time
/// is event time, the wall clock when the batch goes out, never below the partition's last.
class EventProducerAgent final : public Agent {
public:
    EventProducerAgent(Run& run, Driver& driver, std::int64_t index, std::int64_t deadline_ns)
        : run_(run), driver_(driver), deadline_ns_(deadline_ns) {
        for (std::int64_t k = index; k < run.options.partitions; k += run.options.producers) {
            owned_.push_back(k);
        }
        last_ts_ms_.assign(owned_.size(), 0);
    }

    Next next(std::int64_t now_ns, client::OwnedRequest& request, std::int64_t& wake_ns) override {
        const auto batch = static_cast<std::uint64_t>(run_.options.batch);
        if (!is_claimed_) {
            if (owned_.empty() || run_.is_stopping() || now_ns >= deadline_ns_) {
                return Next::stop;
            }
            first_ = run_.next_sequence.fetch_add(batch, relaxed);
            if (run_.target != 0 && first_ >= run_.target) {
                return Next::stop;
            }
            count_ = run_.target == 0 ? batch : std::min(batch, run_.target - first_);
            due_ns_ = run_.pacer.is_paced() ? run_.pacer.due_ns(first_) : now_ns;
            if (due_ns_ >= deadline_ns_) {
                return Next::stop;
            }
            is_claimed_ = true;
        }
        if (run_.is_stopping()) {
            return Next::stop;
        }
        if (now_ns < due_ns_) {
            wake_ns = std::min(due_ns_, now_ns + wake_slice_ns);
            return Next::sleep;
        }
        if (run_.pacer.is_paced()) {
            raise_to(run_.behind_schedule_ns_max, now_ns - due_ns_);
        }
        is_claimed_ = false;
        sent_ns_ = now_ns;
        const std::size_t lane = turn_++ % owned_.size();
        const std::int64_t user = owned_[lane];
        last_ts_ms_[lane] = std::max(last_ts_ms_[lane], run_.clock.wall_ms());
        items_.resize(count_);
        bytes_ = 0;
        for (std::uint64_t i = 0; i < count_; ++i) {
            PushItem& item = items_[i];
            item.queue = run_.options.queue;
            item.partition.assign(run_.partition_prefix).append(std::to_string(user));
            // Amounts 1..100, from the sequence: deterministic, no seed to print.
            write_stream_event(item.payload_json, user, last_ts_ms_[lane],
                               static_cast<std::int64_t>((first_ + i) % 100 + 1),
                               run_.options.size_bytes);
            item.transaction_id.clear();
            bytes_ += item.payload_json.size();
        }
        const queen::Status built = client::build_push(items_, false, driver_.ids, request);
        QUEEN_ASSERT(built.has_value(), "a non-empty batch always builds");
        return Next::send;
    }

    void complete(std::int64_t now_ns, const queen::Status& status,
                  const client::HttpRequest& request,
                  const client::HttpResponse& response) override {
        run_.record_latency(driver_.latency, now_ns - (run_.pacer.is_paced() ? due_ns_ : sent_ns_));
        if (const queen::Status read = read_answer(
                status,
                [&] { return client::read_push_answer(request, response, count_, results_); });
            !read) {
            run_.count_error(failure("push", read));
            return;
        }
        std::uint64_t queued = 0;
        for (const client::PushResult& result : results_) {
            if (result.status == PushStatus::queued || result.status == PushStatus::duplicate) {
                ++queued;
            } else {
                run_.count_error(item_failure(result));
            }
        }
        run_.bytes_produced.fetch_add(bytes_ / count_ * queued, relaxed);
        run_.progress.produced.fetch_add(queued, relaxed);
    }

    void on_stop() override { run_.producer_stopped(); }

private:
    Run& run_;
    Driver& driver_;
    std::int64_t deadline_ns_;
    std::vector<std::int64_t> owned_;       // the partitions (users) this producer writes
    std::vector<std::int64_t> last_ts_ms_;  // the last event time of each owned partition
    std::size_t turn_ = 0;
    std::vector<PushItem> items_;
    std::vector<client::PushResult> results_;
    bool is_claimed_ = false;
    std::uint64_t first_ = 0;
    std::uint64_t count_ = 0;
    std::int64_t due_ns_ = 0;
    std::int64_t sent_ns_ = 0;
    std::uint64_t bytes_ = 0;
};

/// One StreamRunner with its own client, stepped on its own thread.
struct RunnerSlot {
    std::unique_ptr<client::Client> client;
    std::unique_ptr<client::StreamRunner> runner;
};

client::Stream make_stream(const WorkloadOptions& options, const StreamNames& names) {
    auto stream =
        client::Stream::from(options.queue)
            .named(names.query)
            .key_by_field("user")
            .event_time_field("ts")
            .window(client::WindowSpec::tumbling(std::chrono::milliseconds{options.window_ms}));
    if (options.is_verified) {
        stream.aggregate(client::Aggregation::count());
    } else {
        stream.aggregate_field(client::Aggregation::sum(), "amount");
    }
    stream.to_queue(names.query);
    return stream;
}

/// Steps the runner until `stop`; its acked events go to the run's progress as they commit. A
/// retryable failure (the runner already retried its streams calls) is counted and the runner
/// carries on after a pause, as StreamRunner::run_until does; any other ends this runner.
void drive_runner(Run& run, client::StreamRunner& runner, const std::stop_token& stop) {
    std::uint64_t acked_seen = 0;
    while (!stop.stop_requested() && !run.is_stopping()) {
        auto stepped = runner.step();
        const std::uint64_t acked = runner.metrics().acked;
        if (acked > acked_seen) {
            run.progress.consumed.fetch_add(acked - acked_seen, relaxed);
            run.last_delivery_ns.store(run.clock.monotonic_ns(), relaxed);
            acked_seen = acked;
        }
        if (stepped) {
            continue;
        }
        run.count_error(failure("stream runner", stepped.error()));
        if (!client::is_retryable(stepped.error())) {
            return;
        }
        run.options.wait_until_ns(run.clock.monotonic_ns() + wake_slice_ns);
    }
}

queen::Result<void> reset_stream(Run& run, const StreamNames& names) {
    auto deleted = run.client.delete_queue(names.query);
    if (!deleted && !is_not_found(deleted.error())) {
        return deleted.error();
    }
    auto group = run.client.delete_consumer_group(names.group);
    if (!group && !is_not_found(group.error())) {
        return group.error();
    }
    // An earlier run's query: drop its rows (a new epoch), so the open windows read at the end
    // are this run's. Its chain may differ (--verify counts): the first runner registers with
    // reset, the others then find the same chain.
    auto reset = run.client.post_json(names.target + "/reset", "{}");
    if (!reset && !is_not_found(reset.error())) {
        return reset.error();
    }
    return {};
}

/// The sum of member "count" of every window result in the sink queue (read and consumed).
queen::Result<std::uint64_t> count_emitted(Run& run, const StreamNames& names) {
    client::PopRequest pop;
    pop.queue = names.query;
    pop.batch = 10'000;
    pop.partitions = 1'000;
    pop.is_auto_ack = true;
    std::uint64_t total = 0;
    for (;;) {
        QUEEN_TRY(auto popped, run.client.pop(pop));
        if (popped.messages.empty()) {
            return total;
        }
        for (const client::Message& message : popped.messages) {
            const json result = json::parse(message.data_json, nullptr, false);
            if (!result.is_object() || !result.contains("count") ||
                !result["count"].is_number_unsigned()) {
                return invalid("a sink message is not a window result: " +
                               message.data_json.substr(0, 200));
            }
            total += result["count"].get<std::uint64_t>();
        }
    }
}

/// The sum of member "count" of the open windows' rows ("w:...") of every partition of the query.
queen::Result<std::uint64_t> count_open(Run& run, const json& query) {
    std::uint64_t total = 0;
    for (const json& partition : query.value("partitions", json::array())) {
        const json body = {{"query_id", query.value("query_id", "")},
                           {"partition_id", partition.value("partition_id", "")},
                           {"key_prefix", "w:"}};
        QUEEN_TRY(auto answer, run.client.post_json("/streams/v1/state/get", body.dump()));
        const json rows = json::parse(answer, nullptr, false);
        if (!rows.is_object() || !rows.contains("rows") || !rows["rows"].is_array()) {
            return invalid("state/get answered no rows: " + answer.substr(0, 200));
        }
        for (const json& row : rows["rows"]) {
            const json& value = row.contains("value") ? row["value"] : json();
            if (value.is_object() && value.contains("count") &&
                value["count"].is_number_unsigned()) {
                total += value["count"].get<std::uint64_t>();
            }
        }
    }
    return total;
}

queen::Result<json> read_query(Run& run, const StreamNames& names) {
    QUEEN_TRY(auto answer, run.client.get_json(names.target));
    json query = json::parse(answer, nullptr, false);
    if (!query.is_object() || !query.contains("lag") || !query["lag"].is_number()) {
        return invalid("the stream query route answered no lag: " + answer.substr(0, 200));
    }
    return query;
}

}  // namespace

queen::Result<Report> run_stream(Run& run, std::int64_t deadline_ns) {
    const WorkloadOptions& options = run.options;
    const StreamNames names = names_of(options);
    run.partition_prefix = "p";
    QUEEN_TRY(reset_stream(run, names));

    const client::Stream stream = make_stream(options, names);
    client::StreamRunnerOptions runner_options;
    runner_options.batch = options.batch;
    runner_options.partitions = options.pop_partitions;
    runner_options.pop_timeout_ms = options.pop_wait_ms;
    // No idle flush: it closes every known partition's windows by the wall clock, also those
    // another runner is processing, and those with events not consumed yet (they would be late).
    // The open windows stay in the rows, where the check counts them.
    runner_options.idle_flush_ms = 0;
    runner_options.is_reset = true;
    std::vector<RunnerSlot> slots(static_cast<std::size_t>(options.consumers));
    for (std::size_t i = 0; i < slots.size(); ++i) {
        client::ClientOptions client_options = run.client.options();
        client_options.connections_max = 2;
        client_options.id_seed = run.id_seed + 1'000 + i;
        slots[i].client = std::make_unique<client::Client>(client_options, run.clock);
        slots[i].runner = std::make_unique<client::StreamRunner>(*slots[i].client, stream,
                                                                 runner_options, run.clock);
        // One after the other, before any cycle: the first may reset the query to this chain.
        auto started = slots[i].runner->start();
        if (!started) {
            return started.error();
        }
    }

    Report report;
    report.latency_of = options.rate_msgs_per_s > 0 ? "push request, from its due time"
                                                    : "push request (the producers')";
    run.progress.phase.store("run");
    const CpuWindow cpu(options);
    const std::int64_t start_ns = run.clock.monotonic_ns();
    run.pacer = Pacer{options.rate_msgs_per_s, start_ns};
    run.last_delivery_ns.store(start_ns);
    run.produce_end_ns = start_ns;
    run.producers_live.store(options.producers);
    std::stop_source stop;
    std::vector<std::jthread> threads;
    for (RunnerSlot& slot : slots) {
        threads.emplace_back(
            [&run, &slot, token = stop.get_token()] { drive_runner(run, *slot.runner, token); });
    }
    report.latency_ns =
        run_agents(run, options.producers, [&run, deadline_ns](std::int64_t index, Driver& driver) {
            return std::make_unique<EventProducerAgent>(run, driver, index, deadline_ns);
        });

    // The drain: until the runners acked every event pushed, or drain_idle_ms without progress.
    run.progress.phase.store("drain");
    const std::uint64_t produced = run.progress.produced.load();
    while (!run.is_stopping() && run.progress.consumed.load() < produced) {
        const std::int64_t now_ns = run.clock.monotonic_ns();
        const std::int64_t last_ns =
            std::max(run.last_delivery_ns.load(relaxed), run.produce_end_ns);
        if (now_ns - last_ns > options.drain_idle_ms * 1'000'000) {
            break;
        }
        options.wait_until_ns(now_ns + 20'000'000);
    }
    const std::int64_t end_ns = std::max(run.last_delivery_ns.load(), run.produce_end_ns);
    stop.request_stop();
    for (std::jthread& thread : threads) {
        thread.join();
    }
    client::StreamMetrics sum;
    for (const RunnerSlot& slot : slots) {
        const client::StreamMetrics m = slot.runner->metrics();
        sum.pops += m.pops;
        sum.acked += m.acked;
        sum.cycles += m.cycles;
        sum.cycles_failed += m.cycles_failed;
        sum.emitted += m.emitted;
        sum.dropped += m.dropped;
        sum.idle_flush_cycles += m.idle_flush_cycles;
        sum.restores += m.restores;
        sum.retries += m.retries;
        sum.epoch_changes += m.epoch_changes;
        sum.state_changes += m.state_changes;
    }

    report.elapsed_s = elapsed_s(start_ns, end_ns);
    report.produced = produced;
    report.consumed = sum.acked;
    report.messages = sum.acked;
    report.bytes = produced == 0 ? 0 : run.bytes_produced.load() / produced * sum.acked;
    report.produce_msgs_per_s =
        static_cast<double>(produced) / std::max(elapsed_s(start_ns, run.produce_end_ns), 1e-9);
    if (run.pacer.is_paced()) {
        report.target_msgs_per_s = run.pacer.rate_msgs_per_s();
        report.metrics.push_back({"behind_schedule_ms_max",
                                  static_cast<double>(run.behind_schedule_ns_max.load()) / 1e6});
    }
    const auto per_s = [&report](double n) {
        return report.elapsed_s > 0 ? n / report.elapsed_s : 0.0;
    };
    const std::uint64_t batch_cycles = sum.cycles - sum.idle_flush_cycles;
    report.metrics.push_back({"produce_msgs_per_s", report.produce_msgs_per_s});
    report.metrics.push_back({"cycles", static_cast<double>(sum.cycles)});
    report.metrics.push_back({"cycles_per_s", per_s(static_cast<double>(sum.cycles))});
    report.metrics.push_back(
        {"events_per_cycle",
         batch_cycles == 0 ? 0.0
                           : static_cast<double>(sum.acked) / static_cast<double>(batch_cycles)});
    report.metrics.push_back({"window_results", static_cast<double>(sum.emitted)});
    report.metrics.push_back({"cycles_failed", static_cast<double>(sum.cycles_failed)});
    report.metrics.push_back({"retries", static_cast<double>(sum.retries)});
    report.metrics.push_back({"late_dropped", static_cast<double>(sum.dropped)});
    report.metrics.push_back({"restores", static_cast<double>(sum.restores)});
    report.metrics.push_back({"epoch_changes", static_cast<double>(sum.epoch_changes)});
    // Cycles refused because another runner had processed the partition since (redone).
    report.metrics.push_back({"state_changes", static_cast<double>(sum.state_changes)});
    report.metrics.push_back({"pops", static_cast<double>(sum.pops)});
    cpu.add_to(report);

    // The check: the broker's view (the group's lag) and, with verify, the windows' counts.
    run.progress.phase.store("check");
    QUEEN_TRY(auto query, read_query(run, names));
    const auto lag = query["lag"].get<double>();
    report.metrics.push_back({"lag_after_drain", lag});
    std::string check = "lag " + std::to_string(static_cast<std::uint64_t>(lag)) +
                        " after the drain (" + std::to_string(sum.acked) + " of " +
                        std::to_string(produced) + " events acked)";
    bool is_passed = lag == 0;
    if (options.is_verified) {
        QUEEN_TRY(const std::uint64_t emitted, count_emitted(run, names));
        QUEEN_TRY(const std::uint64_t open, count_open(run, query));
        report.metrics.push_back({"verify_emitted_count", static_cast<double>(emitted)});
        report.metrics.push_back({"verify_open_count", static_cast<double>(open)});
        check += "; emitted windows count " + std::to_string(emitted) + " + open windows " +
                 std::to_string(open) + (emitted + open == produced ? " == " : " != ") +
                 std::to_string(produced) + " events pushed";
        is_passed = is_passed && emitted + open == produced;
    }
    report.check = check;
    report.check_passed = is_passed;
    return report;
}

}  // namespace queen::bench::detail
