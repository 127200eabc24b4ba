// bench/src/workload.cpp — producer, consumer and transaction agents (state machines) driven by
// event-loop threads over client::HttpMultiplexer, and the phases of each workload. Time comes
// from the injected clock; waits are socket waits or the caller's wait_until_ns.
#include "queen/bench/workload.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <variant>
#include <vector>

#include "queen/bench/pacer.hpp"
#include "queen/bench/system.hpp"
#include "queen/client/multiplexer.hpp"
#include "queen/client/protocol.hpp"
#include "queen/core/assert.hpp"
#include "queen/core/json_cursor.hpp"
#include "queen/core/json_writer.hpp"
#include "run.hpp"

namespace queen::bench {
namespace detail {
namespace {

/// Drives `agents` over one multiplexer (one slot each) until every agent stopped.
void drive(Run& run, std::vector<std::unique_ptr<Agent>>& agents) {
    enum class State { ready, in_flight, sleeping, stopped };
    const std::size_t count = agents.size();
    client::HttpMultiplexer mux{run.endpoint, run.connection_options, run.clock, count};
    std::vector<client::OwnedRequest> requests(count);
    std::vector<client::OwnedRequest> follows(count);  // a second request pipelined behind
    std::vector<std::uint8_t> is_followed(count, 0);
    std::vector<State> states(count, State::ready);
    std::vector<std::int64_t> wake_ns(count, 0);
    std::size_t live = count;
    std::size_t sleeping = 0;
    // Reports the request (or pipelined pair) of agent i: the answers that arrived whole, then
    // `status` for the rest.
    const auto complete_all = [&](std::size_t i, std::int64_t now_ns, const queen::Status& status) {
        const std::size_t sent = is_followed[i] != 0 ? 2 : 1;
        const std::size_t whole = status ? sent : std::min(mux.answered(i), sent);
        for (std::size_t k = 0; k < sent; ++k) {
            const client::OwnedRequest& owned = k == 0 ? requests[i] : follows[i];
            agents[i]->complete(now_ns, k < whole ? queen::Status{} : status, owned.view(),
                                mux.response(i, k < whole ? k : 0));
        }
    };
    // Asks agent i for its next step until it sends, sleeps or stops.
    const auto advance = [&](std::size_t i, std::int64_t now_ns) {
        for (;;) {
            const Agent::Next next = agents[i]->next(now_ns, requests[i], wake_ns[i]);
            if (next == Agent::Next::stop) {
                states[i] = State::stopped;
                --live;
                agents[i]->on_stop();
                return;
            }
            if (next == Agent::Next::sleep) {
                states[i] = State::sleeping;
                ++sleeping;
                return;
            }
            // Bodies are handed to the slot, not copied: requests[i].body comes back holding the
            // slot's previous buffer (every builder clears it first; completions read only the
            // method and target of the view).
            const client::HttpRequest request = requests[i].view();
            is_followed[i] = agents[i]->follow(follows[i]) ? 1 : 0;
            queen::Status started;
            if (is_followed[i] != 0) {
                const std::array<client::HttpRequest, 2> group{request, follows[i].view()};
                started = mux.start_pipelined(i, group);
            } else {
                started = request.has_body ? mux.start_with_body(i, request, requests[i].body)
                                           : mux.start(i, request);
            }
            if (started) {
                states[i] = State::in_flight;
                return;
            }
            complete_all(i, now_ns, started);
            now_ns = run.clock.monotonic_ns();
        }
    };
    std::int64_t now_ns = run.clock.monotonic_ns();
    for (std::size_t i = 0; i < count; ++i) {
        advance(i, now_ns);
    }
    std::vector<client::HttpMultiplexer::Completion> completed;
    while (live > 0) {
        now_ns = run.clock.monotonic_ns();
        std::int64_t wake_ns_min = now_ns + wake_slice_ns;
        if (sleeping > 0) {
            for (std::size_t i = 0; i < count; ++i) {
                if (states[i] != State::sleeping) {
                    continue;
                }
                if (wake_ns[i] <= now_ns) {
                    --sleeping;
                    advance(i, now_ns);
                }
                if (states[i] == State::sleeping) {  // still, or again (woken before its due)
                    wake_ns_min = std::min(wake_ns_min, wake_ns[i]);
                }
            }
            if (live == 0) {
                break;
            }
        }
        if (mux.in_flight() == 0) {
            // Only sleepers (paced producers ahead of schedule): the caller's wait, not ours.
            QUEEN_ASSERT(sleeping > 0, "a live agent is in flight or asleep");
            run.options.wait_until_ns(wake_ns_min);
            continue;
        }
        completed.clear();
        const queen::Status waited =
            mux.wait(std::max<std::int64_t>(wake_ns_min - now_ns, 0), completed);
        QUEEN_ASSERT(waited.has_value(), "a non-negative timeout");
        if (completed.empty()) {
            continue;
        }
        now_ns = run.clock.monotonic_ns();
        for (const client::HttpMultiplexer::Completion& completion : completed) {
            const std::size_t i = completion.slot;
            complete_all(i, now_ns, completion.status);
            advance(i, now_ns);
        }
    }
}

}  // namespace

Histogram run_agents(Run& run, std::int64_t count, const AgentFactory& make) {
    const auto driver_count = static_cast<std::size_t>(
        std::max<std::int64_t>(1, std::min(run.options.driver_threads, count)));
    std::vector<std::unique_ptr<Driver>> drivers;
    std::vector<std::vector<std::unique_ptr<Agent>>> agents(driver_count);
    for (std::size_t d = 0; d < driver_count; ++d) {
        drivers.push_back(std::make_unique<Driver>(run.id_seed + d, run.clock));
    }
    for (std::int64_t i = 0; i < count; ++i) {
        const auto d = static_cast<std::size_t>(i) % driver_count;
        agents[d].push_back(make(i, *drivers[d]));
    }
    std::vector<std::thread> threads;
    threads.reserve(driver_count - 1);
    for (std::size_t d = 1; d < driver_count; ++d) {
        threads.emplace_back([&run, &agents, d] { drive(run, agents[d]); });
    }
    drive(run, agents[0]);
    for (std::thread& thread : threads) {
        thread.join();
    }
    Histogram merged;
    for (const auto& driver : drivers) {
        merged.merge(driver->latency);
    }
    return merged;
}

}  // namespace detail

namespace {

using namespace detail;

/// e2e's batches: message n goes to partition "p<n mod partitions>" and carries {"seq":n,..}.
class RoundRobinFiller final : public BatchFiller {
public:
    explicit RoundRobinFiller(const Run& run) : run_(run) {}

    void fill(std::size_t, std::uint64_t sequence, std::int64_t stamp_ns, PushItem& item) override {
        assign_partition_name(run_, sequence, item.partition);
        write_payload(item.payload_json, sequence, stamp_ns, run_.options.size_bytes);
    }

private:
    const Run& run_;
};

/// Pushes batches until the target count or `deadline_ns`; one latency sample per push. Paced,
/// each batch waits for its due time and carries it as its stamp (see Pacer). What the batch's
/// messages carry and where they go is the filler's business.
class ProducerAgent final : public Agent {
public:
    ProducerAgent(Run& run, Driver& driver, std::int64_t deadline_ns, Histogram* latency,
                  std::unique_ptr<BatchFiller> filler = nullptr)
        : run_(run),
          driver_(driver),
          deadline_ns_(deadline_ns),
          latency_(latency),
          filler_(filler ? std::move(filler) : std::make_unique<RoundRobinFiller>(run)) {}

    Next next(std::int64_t now_ns, client::OwnedRequest& request, std::int64_t& wake_ns) override {
        const auto batch = static_cast<std::uint64_t>(run_.options.batch);
        if (!is_claimed_) {
            if (run_.is_stopping() || now_ns >= deadline_ns_) {
                return Next::stop;
            }
            first_ = run_.next_sequence.fetch_add(batch, relaxed);
            if (run_.target != 0 && first_ >= run_.target) {
                return Next::stop;
            }
            count_ = run_.target == 0 ? batch : std::min(batch, run_.target - first_);
            if (run_.pacer.is_paced()) {
                stamp_ns_ = run_.pacer.due_ns(first_);
                if (stamp_ns_ >= deadline_ns_) {
                    return Next::stop;  // due after the end of the run: never sent
                }
            }
            is_claimed_ = true;
        }
        if (run_.pacer.is_paced()) {
            if (run_.is_stopping()) {
                return Next::stop;
            }
            if (now_ns < stamp_ns_) {
                // Slices of at most wake_slice_ns, so a stop request is seen within one.
                wake_ns = std::min(stamp_ns_, now_ns + wake_slice_ns);
                return Next::sleep;
            }
            raise_to(run_.behind_schedule_ns_max, now_ns - stamp_ns_);
        } else {
            stamp_ns_ = now_ns;
        }
        is_claimed_ = false;
        items_.resize(count_);
        bytes_ = 0;
        for (std::uint64_t i = 0; i < count_; ++i) {
            PushItem& item = items_[i];
            // Assignments into the reused items keep their strings' storage: no allocation per
            // message once the first batch went out.
            item.queue = run_.options.queue;
            filler_->fill(i, first_ + i, stamp_ns_, item);
            item.transaction_id.clear();
            bytes_ += item.payload_json.size();
        }
        // The bench builds valid JSON itself: no validation pass.
        const queen::Status built = client::build_push(items_, false, driver_.ids, request);
        QUEEN_ASSERT(built.has_value(), "a non-empty batch always builds");
        return Next::send;
    }

    void complete(std::int64_t now_ns, const queen::Status& status,
                  const client::HttpRequest& request,
                  const client::HttpResponse& response) override {
        if (latency_ != nullptr) {
            run_.record_latency(*latency_, now_ns - stamp_ns_);
        }
        if (const queen::Status read = read_answer(
                status,
                [&] { return client::read_push_answer(request, response, count_, results_); });
            !read) {
            run_.count_error(failure("push", read));
            return;
        }
        std::uint64_t queued = 0;
        for (std::size_t i = 0; i < results_.size(); ++i) {
            const PushStatus pushed = results_[i].status;
            if (pushed == PushStatus::queued || pushed == PushStatus::duplicate) {
                ++queued;
                filler_->queued(i);
                if (run_.produced_flags) {
                    run_.produced_flags[first_ + i].store(1, relaxed);
                }
            } else {
                run_.count_error(item_failure(results_[i]));
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
    Histogram* latency_;  // null: not recorded (e2e, fill)
    std::unique_ptr<BatchFiller> filler_;
    std::vector<PushItem> items_;
    std::vector<client::PushResult> results_;  // reused: read_push_answer keeps its storage
    bool is_claimed_ = false;                  // first_/count_ claimed, not sent yet (paced)
    std::uint64_t first_ = 0;
    std::uint64_t count_ = 0;
    std::int64_t stamp_ns_ = 0;
    std::uint64_t bytes_ = 0;
};

/// Pops and acks until producing is over and everything produced was consumed (or nothing came
/// for drain_idle_ms), or `deadline_ns`. Latency: pop + ack, or payload stamp to delivery.
class ConsumerAgent final : public Agent {
public:
    ConsumerAgent(Run& run, std::int64_t deadline_ns, bool is_e2e_latency, Histogram* latency,
                  LaneChecker* lanes = nullptr)
        : run_(run),
          deadline_ns_(deadline_ns),
          is_e2e_latency_(is_e2e_latency),
          latency_(latency),
          lanes_(lanes) {
        pop_.queue = run.options.queue;
        pop_.batch = run.options.batch;
        pop_.is_wait = true;
        pop_.timeout_ms = run.options.pop_wait_ms;
        pop_.partitions = run.options.pop_partitions;
        pop_.consumer_group = run.options.consumer_group;
        const queen::Status built = client::build_pop(pop_, run.pop_wait_margin_ms, pop_request_);
        QUEEN_ASSERT(built.has_value(), "validated options build a pop");
    }

    Next next(std::int64_t now_ns, client::OwnedRequest& request, std::int64_t&) override {
        if (is_ack_due_) {
            // Every popped message, its ids and lease read in place (no Ack copies).
            client::build_ack_batch(popped_.messages, client::AckStatus::completed,
                                    popped_.consumer_group, request);
            return Next::send;
        }
        if (run_.is_stopping() || now_ns >= deadline_ns_) {
            return Next::stop;
        }
        if (run_.is_producing_over.load()) {
            const std::uint64_t produced = run_.progress.produced.load();
            if (run_.progress.consumed.load() >= produced) {
                return Next::stop;
            }
            const std::int64_t idle_ns = now_ns - run_.last_delivery_ns.load(relaxed);
            if (idle_ns > run_.options.drain_idle_ms * 1'000'000) {
                return Next::stop;
            }
        }
        start_ns_ = now_ns;
        request = pop_request_;  // assignments keep the target's storage
        return Next::send;
    }

    void complete(std::int64_t now_ns, const queen::Status& status,
                  const client::HttpRequest& request,
                  const client::HttpResponse& response) override {
        if (is_ack_due_) {
            complete_ack(now_ns, status, request, response);
            return;
        }
        if (const queen::Status read = read_answer(
                status, [&] { return client::read_pop_answer(request, response, pop_, popped_); });
            !read) {
            run_.count_error(failure("pop", read));
            return;
        }
        if (popped_.messages.empty()) {
            run_.empty_pops.fetch_add(1, relaxed);
            return;
        }
        run_.last_delivery_ns.store(now_ns, relaxed);
        bytes_ = 0;
        std::int64_t latency_max_ns = 0;
        for (std::size_t m = 0; m < popped_.messages.size(); ++m) {
            const client::Message& message = popped_.messages[m];
            bytes_ += message.data_json.size();
            PayloadStamp stamp;
            if (!parse_payload(message.data_json, stamp)) {
                run_.count_error("pop: a delivered payload is not one the bench wrote");
                continue;
            }
            if (is_e2e_latency_ && latency_ != nullptr) {
                latency_->record(now_ns - stamp.timestamp_ns);
                latency_max_ns = std::max(latency_max_ns, now_ns - stamp.timestamp_ns);
            }
            if (lanes_ != nullptr) {
                check_lane(message, stamp);
            } else if (run_.consumed_flags && stamp.sequence < run_.target &&
                       run_.consumed_flags[stamp.sequence].exchange(1) != 0) {
                run_.duplicates.fetch_add(1, relaxed);
            }
        }
        raise_to(run_.progress.latency_max_ns, latency_max_ns);
        is_ack_due_ = true;
    }

private:
    /// The lanes workload: the delivery goes to its lane's order check, once its payload's lane
    /// is one of the run's and the partition it came from is that lane's.
    void check_lane(const client::Message& message, const PayloadStamp& stamp) {
        if (stamp.lane < 0 || static_cast<std::uint64_t>(stamp.lane) >= lanes_->lanes()) {
            run_.count_error("pop: a delivered payload names no lane of the run");
            return;
        }
        const std::string_view partition = message.partition;
        const std::string_view prefix = run_.partition_prefix;
        std::int64_t lane = -1;
        if (partition.starts_with(prefix)) {
            const char* end = partition.data() + partition.size();
            const auto [stop, ec] = std::from_chars(partition.data() + prefix.size(), end, lane);
            lane = ec == std::errc{} && stop == end ? lane : -1;
        }
        if (lane != stamp.lane) {
            run_.count_error("pop: a message of a lane came from another lane's partition");
            return;
        }
        lanes_->deliver(static_cast<std::size_t>(stamp.lane), stamp.sequence);
    }

    void complete_ack(std::int64_t now_ns, const queen::Status& status,
                      const client::HttpRequest& request, const client::HttpResponse& response) {
        is_ack_due_ = false;
        if (!is_e2e_latency_ && latency_ != nullptr) {
            run_.record_latency(*latency_, now_ns - start_ns_);
        }
        if (const queen::Status read = read_answer(status,
                                                   [&] {
                                                       return client::read_ack_batch_answer(
                                                           request, response,
                                                           popped_.messages.size(), ack_results_);
                                                   });
            !read) {
            run_.count_error(failure("ack", read));
            return;
        }
        std::uint64_t successes = 0;
        for (const client::AckResult& result : ack_results_) {
            if (result.is_success) {
                ++successes;
            } else {
                run_.count_error("ack: " +
                                 (result.error.empty() ? std::string("not acked") : result.error));
            }
        }
        run_.bytes_consumed.fetch_add(bytes_ / popped_.messages.size() * successes, relaxed);
        run_.count_consumed(successes, now_ns);
    }

    Run& run_;
    std::int64_t deadline_ns_;
    bool is_e2e_latency_;
    Histogram* latency_;
    LaneChecker* lanes_;  // lanes workload: every delivery's order check; else null
    PopRequest pop_;
    client::OwnedRequest pop_request_;  // built once: every pop of this agent is the same
    client::PopResult popped_;          // reused: read_pop_answer keeps its messages' storage
    std::vector<client::AckResult> ack_results_;
    bool is_ack_due_ = false;  // popped a batch; its ack goes next
    std::int64_t start_ns_ = 0;
    std::uint64_t bytes_ = 0;
};

/// Runs the producer agents until they stop; returns their push latencies when `is_recorded`.
Histogram run_producers(Run& run, std::int64_t deadline_ns, bool is_recorded) {
    run.producers_live.store(run.options.producers);
    return run_agents(run, run.options.producers,
                      [&run, deadline_ns, is_recorded](std::int64_t, Driver& driver) {
                          return std::make_unique<ProducerAgent>(
                              run, driver, deadline_ns, is_recorded ? &driver.latency : nullptr);
                      });
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
    auto configured = run.client.configure(configure);
    if (!configured) {
        return configured.error();
    }
    return {};
}

std::int64_t sample_rss(const WorkloadOptions& options) {
    return options.server_rss_bytes ? options.server_rss_bytes() : -1;
}

/// Fills the queue with run.target messages using the producer threads; returns the fill rate.
double fill(Run& run, std::int64_t deadline_ns) {
    run.progress.phase.store("fill");
    const std::int64_t start_ns = run.clock.monotonic_ns();
    run_producers(run, deadline_ns, false);
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
    const CpuWindow cpu(run.options);
    run.last_delivery_ns.store(run.clock.monotonic_ns());
    const std::int64_t start_ns = run.clock.monotonic_ns();
    report.latency_ns =
        run_agents(run, run.options.consumers, [&run, deadline_ns](std::int64_t, Driver& driver) {
            return std::make_unique<ConsumerAgent>(run, deadline_ns, false, &driver.latency);
        });
    report.elapsed_s = elapsed_s(start_ns, run.last_delivery_ns.load());
    report.consumed = run.progress.consumed.load();
    report.messages = report.consumed;
    report.bytes = run.bytes_consumed.load();
    report.missing = count_missing(run);
    report.duplicates = run.duplicates.load();
    cpu.add_to(report);
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
    const CpuWindow cpu(run.options);
    const std::int64_t start_ns = run.clock.monotonic_ns();
    run.pacer = Pacer{run.options.rate_msgs_per_s, start_ns};
    report.latency_ns = run_producers(run, deadline_ns, true);
    report.elapsed_s = elapsed_s(start_ns, run.clock.monotonic_ns());
    report.produced = run.progress.produced.load();
    report.messages = report.produced;
    report.bytes = run.bytes_produced.load();
    report.produce_msgs_per_s = report.msgs_per_s();
    add_pacing_metrics(run, report);
    cpu.add_to(report);
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

}  // namespace

namespace detail {

Report run_e2e(Run& run, std::int64_t produce_deadline_ns, std::int64_t bound_ns,
               const E2eShape& shape) {
    Report report;
    report.latency_of = run.options.rate_msgs_per_s > 0
                            ? "due time (payload stamp) to delivery"
                            : "payload timestamp to delivery; unpaced, so it includes the "
                              "backlog producers build ahead of consumers (see --rate)";
    run.progress.phase.store("run");
    const CpuWindow cpu(run.options);
    const std::int64_t start_ns = run.clock.monotonic_ns();
    run.pacer = Pacer{run.options.rate_msgs_per_s, start_ns};
    run.last_delivery_ns.store(start_ns);
    run.produce_end_ns = start_ns;
    run.producers_live.store(run.options.producers);
    run.half_ns = start_ns + (produce_deadline_ns - start_ns) / 2;
    const std::int64_t consume_deadline_ns = produce_deadline_ns + bound_ns;
    // Producers first, so each driver thread gets its share of both kinds; only consumers record
    // latency.
    report.latency_ns =
        run_agents(run, run.options.producers + run.options.consumers,
                   [&run, &shape, produce_deadline_ns, consume_deadline_ns](
                       std::int64_t index, Driver& driver) -> std::unique_ptr<Agent> {
                       if (index < run.options.producers) {
                           return std::make_unique<ProducerAgent>(
                               run, driver, produce_deadline_ns, nullptr,
                               shape.make_filler ? shape.make_filler(index) : nullptr);
                       }
                       return std::make_unique<ConsumerAgent>(run, consume_deadline_ns, true,
                                                              &driver.latency, shape.lanes);
                   });
    const std::int64_t produce_end_ns = run.produce_end_ns;
    const std::uint64_t consumed_at_produce_end = run.consumed_at_produce_end;
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
    if (run.is_half_marked.load() && produce_end_ns > run.half_mark_ns &&
        consumed_at_produce_end >= run.consumed_at_half) {
        report.steady_consume_msgs_per_s =
            static_cast<double>(consumed_at_produce_end - run.consumed_at_half) /
            elapsed_s(run.half_mark_ns, produce_end_ns);
    }
    // How far consumers trailed when the producers stopped, and how long they took to catch up.
    const std::uint64_t lag_msgs =
        report.produced > consumed_at_produce_end ? report.produced - consumed_at_produce_end : 0;
    report.metrics.push_back({"consumer_lag_msgs_at_produce_end", static_cast<double>(lag_msgs)});
    report.metrics.push_back(
        {"drain_after_produce_s",
         elapsed_s(produce_end_ns, std::max(run.last_delivery_ns.load(), produce_end_ns))});
    add_pacing_metrics(run, report);
    cpu.add_to(report);
    return report;
}

}  // namespace detail

namespace {

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
        case Workload::stream: return "stream";
        case Workload::lanes: return "lanes";
    }
    QUEEN_UNREACHABLE();
}

queen::Result<Workload> parse_workload(std::string_view name) {
    for (const Workload w :
         {Workload::produce, Workload::consume, Workload::e2e, Workload::transaction,
          Workload::partitions, Workload::stream, Workload::lanes}) {
        if (to_string(w) == name) {
            return w;
        }
    }
    return invalid("unknown workload '" + std::string(name) +
                   "' (produce, consume, e2e, transaction, partitions, stream, lanes)");
}

std::string_view to_string(Steps steps) noexcept {
    switch (steps) {
        case Steps::ack_push: return "ack-push";
        case Steps::one_call: return "one-call";
        case Steps::four_requests: return "four-requests";
        case Steps::one_call_next: return "one-call-next";
        case Steps::stream_cycle: return "stream-cycle";
        case Steps::ack_kv_push: return "ack-kv-push";
    }
    return "unknown";
}

queen::Result<Steps> parse_steps(std::string_view name) {
    for (const Steps steps : {Steps::ack_push, Steps::one_call, Steps::four_requests,
                              Steps::one_call_next, Steps::stream_cycle, Steps::ack_kv_push}) {
        if (name == to_string(steps)) {
            return steps;
        }
    }
    return invalid("unknown steps '" + std::string(name) +
                   "' (ack-push, one-call, four-requests, one-call-next, stream-cycle, "
                   "ack-kv-push)");
}

std::string_view describe_transaction_loop(Steps steps, bool is_pipelined) noexcept {
    // A sample starts when the request that popped the batch is sent and ends with the answer
    // of the last request that finishes it; pipelined and one-call-next pop the next batch with
    // the previous loop's transaction, so their sample starts there.
    switch (steps) {
        case Steps::ack_push:
            return is_pipelined ? "pop pipelined behind the previous transaction + transaction "
                                  "(ack and push)"
                                : "pop + transaction (ack and push)";
        case Steps::one_call:
            return is_pipelined ? "pop pipelined behind the previous transaction + transaction "
                                  "(ack, kv.set, push, timer.set)"
                                : "pop + transaction (ack, kv.set, push, timer.set)";
        case Steps::four_requests:
            return "pop + ack + kv.set transaction + push + timer.set transaction (five requests)";
        case Steps::one_call_next:
            return "transaction (ack, kv.set, push, timer.set) + next pop, one request a loop: "
                   "from the request that popped a batch to the one that finished it";
        case Steps::stream_cycle:
            return "pop (consumer group) + streams cycle (ack of the last message, state upsert, "
                   "push)";
        case Steps::ack_kv_push: return "pop (consumer group) + transaction (ack, kv.set, push)";
    }
    return "unknown";
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
    if (driver_threads < 1 || driver_threads > 64) {
        return invalid("driver threads must be in [1, 64]");
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
    if (rate_msgs_per_s > 0 && workload != Workload::produce && workload != Workload::e2e &&
        workload != Workload::stream && workload != Workload::lanes) {
        return invalid("a rate applies to the produce, e2e, lanes and stream workloads only");
    }
    if (window_ms < 1 || window_ms > 86'400'000) {
        return invalid("window must be in [1, 86400000] ms");
    }
    if (is_verified && workload != Workload::stream) {
        return invalid("verify applies to the stream workload only");
    }
    if (workload == Workload::stream && producers > partitions) {
        // Each partition is one producer's, so its event times never go back (no late events).
        return invalid(
            "stream: producers must not exceed partitions (each partition is one "
            "producer's)");
    }
    if (workload == Workload::lanes && producers > partitions) {
        return invalid("lanes: producers must not exceed partitions (each lane is one producer's)");
    }
    if (is_pipelined && workload != Workload::transaction) {
        return invalid("pipelining applies to the transaction workload only");
    }
    if (steps != Steps::ack_push && workload != Workload::transaction) {
        return invalid("steps apply to the transaction workload only");
    }
    if (is_pipelined && steps != Steps::ack_push && steps != Steps::one_call) {
        // four-requests has no transaction for the pop to follow; one-call-next pops inside
        // its transaction already; the stream comparison measures the unpipelined loop of a
        // runner.
        return invalid("pipelining applies to the steps ack-push and one-call only, not " +
                       std::string(to_string(steps)));
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
    if (options.workload == Workload::stream && !options.wait_until_ns) {
        return invalid("the stream workload needs wait_until_ns (it waits for the runners)");
    }
    Run run{client, options, clock, progress};
    std::uint64_t count = options.messages;
    if (options.workload == Workload::partitions) {
        count = static_cast<std::uint64_t>(options.partitions);
    } else if (options.workload == Workload::consume && count == 0) {
        count = 100'000;
    }
    if (options.workload == Workload::transaction || options.workload == Workload::stream ||
        options.workload == Workload::lanes) {
        // Transactions, or messages counted by the workload's own check (stream: the query's
        // lag; lanes: per lane, as the payloads carry a lane's sequence, not the run's).
        run.target = count;
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
        case Workload::e2e: report = run_e2e(run, deadline_ns, bound_ns, E2eShape{}); break;
        case Workload::lanes: report = run_lanes(run, deadline_ns, bound_ns); break;
        case Workload::transaction: {
            QUEEN_TRY(report, run_transaction(run, deadline_ns));
            break;
        }
        case Workload::partitions: report = run_partitions(run, bound_ns); break;
        case Workload::stream: {
            QUEEN_TRY(report, run_stream(run, deadline_ns));
            break;
        }
    }
    progress.phase.store("done");
    if (options.workload != Workload::produce && options.workload != Workload::stream) {
        report.metrics.push_back({"empty_pops", static_cast<double>(run.empty_pops.load())});
    }
    report.workload = std::string(to_string(options.workload));
    report.errors = progress.errors.load();
    {
        std::lock_guard lock(run.error_mutex);
        report.error_samples = run.error_samples;
    }
    Conditions& c = report.conditions;
    c.batch = options.batch;
    c.size_bytes = options.size_bytes;
    c.partitions = options.partitions;
    c.producers = options.workload == Workload::transaction ? 0 : options.producers;
    c.consumers = options.workload == Workload::produce ? 0 : options.consumers;
    c.driver_threads = options.driver_threads;
    c.is_pipelined = options.is_pipelined;
    // Transaction workers pop their own partition; produce does not pop.
    c.pop_partitions =
        options.workload == Workload::produce || options.workload == Workload::transaction
            ? 0
            : options.pop_partitions;
    if (options.workload == Workload::lanes) {
        c.seed = options.seed;
    }
    return report;
}

std::string make_payload(std::uint64_t sequence, std::int64_t timestamp_ns, std::int64_t size_bytes,
                         std::int64_t lane) {
    std::string out;
    write_payload(out, sequence, timestamp_ns, size_bytes, lane);
    return out;
}

void write_payload(std::string& out, std::uint64_t sequence, std::int64_t timestamp_ns,
                   std::int64_t size_bytes, std::int64_t lane) {
    const auto size = static_cast<std::size_t>(std::max<std::int64_t>(size_bytes, 0));
    json::Writer payload(std::move(out), size);
    payload.begin_object();
    if (lane >= 0) {
        payload.field("lane", lane);
    }
    payload.field("seq", sequence).field("ts", timestamp_ns).key("pad");
    const std::size_t fixed_size = payload.text().size() + 3;  // plus the quotes and the brace
    const std::size_t pad = size > fixed_size ? size - fixed_size : 0;
    std::memset(payload.string_slot(pad), 'x', pad);
    out = payload.end_object().take();
}

void write_stream_event(std::string& out, std::int64_t user, std::int64_t event_time_ms,
                        std::int64_t amount, std::int64_t size_bytes) {
    const auto size = static_cast<std::size_t>(std::max<std::int64_t>(size_bytes, 0));
    json::Writer event(std::move(out), size);
    char name[24] = {'u'};
    const auto [end, ec] = std::to_chars(name + 1, name + sizeof name, user);
    QUEEN_ASSERT(ec == std::errc{}, "a 64-bit number fits in 23 digits");
    event.begin_object()
        .field("user", std::string_view(name, static_cast<std::size_t>(end - name)))
        .field("ts", event_time_ms)
        .field("amount", amount)
        .key("pad");
    const std::size_t fixed_size = event.text().size() + 3;  // plus the quotes and the brace
    const std::size_t pad = size > fixed_size ? size - fixed_size : 0;
    std::memset(event.string_slot(pad), 'x', pad);
    out = event.end_object().take();
}

namespace {

/// The integer at the cursor (a JSON number without fraction or exponent that fits `T`).
template <class T>
bool read_whole_number(json::Cursor& cursor, T& value) noexcept {
    std::string_view raw;
    if (!cursor.read_value(raw) || raw.empty()) {
        return false;
    }
    const auto [end, ec] = std::from_chars(raw.data(), raw.data() + raw.size(), value);
    return ec == std::errc{} && end == raw.data() + raw.size();
}

}  // namespace

bool parse_payload(std::string_view json, PayloadStamp& stamp) noexcept {
    // Read in the order write_payload writes, {["lane":L,]"seq":N,"ts":M,...}: the members are
    // then found without looking for them; any other order is read member by member.
    json::Cursor cursor(json);
    if (!cursor.enter_object()) {
        return false;
    }
    stamp.lane = -1;
    bool has_sequence = false;
    bool has_timestamp = false;
    bool is_first = true;
    while (!(has_sequence && has_timestamp)) {
        std::string_view key;
        if (is_first && cursor.next_member_is(R"("lane":)", is_first)) {
            key = "lane";
        } else if (!has_sequence && cursor.next_member_is(R"("seq":)", is_first)) {
            key = "seq";
        } else if (!has_timestamp && cursor.next_member_is(R"("ts":)", is_first)) {
            key = "ts";
        } else if (!cursor.next_member(key, is_first)) {
            return false;
        }
        if (json::is_key(key, "lane") && stamp.lane < 0) {
            if (!read_whole_number(cursor, stamp.lane) || stamp.lane < 0) {
                return false;
            }
        } else if (json::is_key(key, "seq") && !has_sequence) {
            if (!read_whole_number(cursor, stamp.sequence)) {
                return false;
            }
            has_sequence = true;
        } else if (json::is_key(key, "ts") && !has_timestamp) {
            if (!read_whole_number(cursor, stamp.timestamp_ns)) {
                return false;
            }
            has_timestamp = true;
        } else if (!cursor.skip_value()) {
            return false;
        }
    }
    return true;
}

}  // namespace queen::bench
