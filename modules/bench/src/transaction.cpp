// bench/src/transaction.cpp — the transaction workload: workers that pop a batch and finish it
// in one transaction (ack + push, or the four-step worker, which may also pop the next batch), in
// four requests, or in one streams cycle (and the transaction of the same three effects).
#include <string>
#include <utility>
#include <variant>

#include "queen/core/json_scan.hpp"
#include "queen/core/json_writer.hpp"
#include "run.hpp"

namespace queen::bench::detail {
namespace {

/// One transaction worker on its own partition: pop a batch, then ack it and push the next batch
/// in one transaction. Pipelined (options.is_pipelined), the pop of the next batch goes with the
/// transaction, right behind it on the connection: the server handles them in that order, so the
/// pop finds the batch the transaction pushed, and a loop is one round trip instead of two.
/// With one_call_next the transaction pops the next batch itself (its `next`, applied in the same
/// log entry after the push), so a loop is one request; an empty next pop sends the worker back
/// to its waiting pop.
class TransactionAgent final : public Agent {
public:
    TransactionAgent(Run& run, Driver& driver, std::int64_t worker, std::int64_t deadline_ns)
        : run_(run), driver_(driver), deadline_ns_(deadline_ns) {
        pop_.queue = run.options.queue;
        pop_.partition = "t" + std::to_string(worker);
        pop_.consumer_group = run.group;  // empty: queue mode
        pop_.batch = run.options.batch;
        pop_.is_wait = true;
        pop_.timeout_ms = run.options.pop_wait_ms;
        const queen::Status built = client::build_pop(pop_, run.pop_wait_margin_ms, pop_request_);
        QUEEN_ASSERT(built.has_value(), "validated options build a pop");
        next_pop_.queue = pop_.queue;
        next_pop_.partition = pop_.partition;
        next_pop_.consumer_group = pop_.consumer_group;
        next_pop_.batch = pop_.batch;
    }

    Next next(std::int64_t now_ns, client::OwnedRequest& request, std::int64_t&) override {
        if (is_commit_due_ && run_.options.steps == Steps::four_requests) {
            build_step(request);
            return Next::send;
        }
        if (is_commit_due_ && run_.options.steps == Steps::stream_cycle) {
            build_cycle(request);
            return Next::send;
        }
        if (is_commit_due_) {
            // The last transaction (count or deadline reached) pops nothing.
            is_next_asked_ = run_.options.steps == Steps::one_call_next && is_pop_wanted(now_ns);
            if (!is_next_asked_) {
                transaction_.next.reset();
            } else if (!transaction_.next) {
                transaction_.next = next_pop_;
            }
            const queen::Status built =
                client::build_transaction(transaction_, false, driver_.ids, request);
            QUEEN_ASSERT(built.has_value(), "a popped batch builds a transaction");
            is_pop_following_ = run_.options.is_pipelined && is_pop_wanted(now_ns);
            if (is_pop_following_ || is_next_asked_) {
                pop_start_ns_ = now_ns;
            }
            return Next::send;
        }
        if (!is_pop_wanted(now_ns)) {
            return Next::stop;
        }
        pop_start_ns_ = now_ns;
        request = pop_request_;  // assignments keep the target's storage
        return Next::send;
    }

    bool follow(client::OwnedRequest& follow) override {
        if (!is_pop_following_) {
            return false;
        }
        follow = pop_request_;
        return true;
    }

    void complete(std::int64_t now_ns, const queen::Status& status,
                  const client::HttpRequest& request,
                  const client::HttpResponse& response) override {
        if (is_commit_due_ && run_.options.steps == Steps::four_requests) {
            if (const queen::Status read =
                    read_answer(status, [&] { return read_step(request, response); });
                !read) {
                is_commit_due_ = false;
                step_ = 0;
                run_.count_error(failure("step", read));
                return;
            }
            // An ack or push item the server did not take leaves the loop unfinished: an error,
            // like a failed request, not a silently shorter run.
            if (const std::string failed = step_item_failure(); !failed.empty()) {
                is_commit_due_ = false;
                step_ = 0;
                run_.count_error(failed);
                return;
            }
            if (++step_ < 4) {
                return;  // the next request of the loop
            }
            step_ = 0;
        }
        if (is_commit_due_) {
            is_commit_due_ = false;
            run_.record_latency(driver_.latency, now_ns - loop_start_ns_);
            if (run_.options.steps == Steps::stream_cycle) {
                if (const queen::Status read =
                        read_answer(status, [&] { return read_cycle_answer(request, response); });
                    !read) {
                    run_.count_error(failure("cycle", read));
                    return;
                }
                finish_loop();
                return;
            }
            if (run_.options.steps == Steps::four_requests) {
                run_.transactions.fetch_add(1, relaxed);
                run_.bytes_consumed.fetch_add(bytes_, relaxed);
                run_.progress.consumed.fetch_add(moved_, relaxed);
                run_.progress.produced.fetch_add(moved_, relaxed);
                return;
            }
            if (const queen::Status read = read_answer(
                    status,
                    [&] { return client::read_transaction_answer(request, response, committed_); });
                !read) {
                run_.count_error(failure("transaction", read));
                return;
            }
            run_.transactions.fetch_add(1, relaxed);
            run_.bytes_consumed.fetch_add(bytes_, relaxed);
            run_.progress.consumed.fetch_add(moved_, relaxed);
            run_.progress.produced.fetch_add(moved_, relaxed);
            if (is_next_asked_) {
                take_next();
            }
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
            return;  // a lease still held (a failed commit): it comes back after its expiry
        }
        take_batch();
    }

private:
    /// one_call_next, after a committed transaction: its next pop's messages are the batch in
    /// hand (swapped in, so both results keep their storage); an empty one leaves the worker to
    /// its waiting pop.
    void take_next() {
        if (!committed_.next) {
            // A broker without next pops ignores the member: the loop would silently be
            // one_call with a waiting pop, which is not what this run measures.
            run_.count_error("transaction: the answer has no next (does the broker take next?)");
            return;
        }
        if (committed_.next->messages.empty()) {
            run_.empty_next_pops.fetch_add(1, relaxed);
            return;
        }
        std::swap(popped_, *committed_.next);
        take_batch();
    }

    /// The batch in popped_ (sent at pop_start_ns_) is the worker's: claim its transaction and
    /// build it.
    void take_batch() {
        loop_start_ns_ = pop_start_ns_;
        // Claiming after the pop (not before) keeps the count exact however many workers run:
        // exactly `target` transactions are attempted, and an empty pop claims nothing.
        if (run_.target != 0 && run_.transactions_claimed.fetch_add(1, relaxed) >= run_.target) {
            is_claim_refused_ = true;  // the popped batch stays leased, as a crashed worker's would
            return;
        }
        // The acks of the batch, then one push of as many new messages. Assignments into the
        // reused operations keep their strings' storage while the batch size stays the same.
        const std::size_t count = popped_.messages.size();
        auto& operations = transaction_.operations;
        operations.resize(count + 1);
        if (!std::holds_alternative<client::TransactionPush>(operations[count])) {
            operations[count].emplace<client::TransactionPush>();
        }
        auto& items = std::get<client::TransactionPush>(operations[count]).items;
        items.resize(count);
        bytes_ = 0;
        for (std::size_t m = 0; m < count; ++m) {
            if (!std::holds_alternative<Ack>(operations[m])) {
                operations[m].emplace<Ack>();
            }
            assign_ack(popped_.messages[m], std::get<Ack>(operations[m]));
            PushItem& item = items[m];
            item.queue = run_.options.queue;
            item.partition = pop_.partition;
            write_payload(item.payload_json, run_.next_sequence.fetch_add(1, relaxed),
                          loop_start_ns_, run_.options.size_bytes);
            item.transaction_id.clear();  // generated by driver_.ids when the body is built
            bytes_ += item.payload_json.size();
        }
        if (run_.options.steps == Steps::stream_cycle || run_.options.steps == Steps::ack_kv_push) {
            // The worker's state: the same 64-byte value as a state row (in the cycle, built
            // from state_value_) or as a KV key (in the transaction).
            write_payload(state_value_, run_.next_sequence.load(relaxed), loop_start_ns_,
                          state_value_bytes);
            if (run_.options.steps == Steps::ack_kv_push) {
                auto& kv = operations.emplace_back().emplace<client::KvSet>();
                kv.bucket = "bench";
                kv.key = pop_.partition;
                kv.value_json = state_value_;
            }
        } else if (run_.options.steps != Steps::ack_push) {
            // The worker's state (a key per worker) and its reminder (one timer per worker,
            // moved a minute out by every loop: it never fires during a run).
            auto& kv = operations.emplace_back().emplace<client::KvSet>();
            kv.bucket = "bench";
            kv.key = pop_.partition;
            kv.value_json = "{\"seq\":" + std::to_string(run_.next_sequence.load(relaxed)) + "}";
            auto& timer = operations.emplace_back().emplace<client::TimerSet>();
            timer.id = "bench-" + pop_.partition;
            timer.queue = run_.options.queue + "-reminders";
            timer.payload_json = "{}";
            timer.delay_ms = 60'000;
            timer.is_replace = true;
        }
        moved_ = count;
        is_commit_due_ = true;
    }

    /// A loop committed: count what it moved.
    void finish_loop() {
        run_.transactions.fetch_add(1, relaxed);
        run_.bytes_consumed.fetch_add(bytes_, relaxed);
        run_.progress.consumed.fetch_add(moved_, relaxed);
        run_.progress.produced.fetch_add(moved_, relaxed);
    }

    /// stream_cycle: POST /streams/v1/cycle with the ack of the batch's last message (which
    /// moves the group's cursor past the batch; `count` tells the metrics how many it closes),
    /// the worker's state row and the push of the next batch (the items take_batch() built).
    void build_cycle(client::OwnedRequest& request) {
        const client::Message& last = popped_.messages.back();
        const auto& items =
            std::get<client::TransactionPush>(transaction_.operations[moved_]).items;
        json::Writer body(std::move(request.body), 512 + moved_ * 128);
        body.begin_object()
            .field("query_id", run_.stream_query_id)
            .field("partition_id", last.partition_id)
            .field("consumer_group", run_.group)
            .key("state_ops")
            .begin_array()
            .begin_object()
            .field("type", "upsert")
            .field("key", pop_.partition)
            .key("value")
            .raw(state_value_)
            .end_object()
            .end_array()
            .key("push_items")
            .begin_array();
        for (const PushItem& item : items) {
            id_.clear();
            driver_.ids.append_uuid_v7(id_);
            body.begin_object()
                .field("queue", item.queue)
                .field("partition", item.partition)
                .key("payload")
                .raw(item.payload_json)
                .field("transactionId", id_)
                .end_object();
        }
        body.end_array()
            .key("ack")
            .begin_object()
            .field("transactionId", last.transaction_id)
            .field("leaseId", last.lease_id)
            .field("status", "completed")
            .field("count", static_cast<std::uint64_t>(moved_))
            .end_object()
            .field("release_lease", true)
            .field("epoch", run_.stream_epoch)
            .end_object();
        request.body = body.take();
        request.method = "POST";
        request.target = "/streams/v1/cycle";
        request.has_body = true;
        request.is_idempotent = false;  // a resent cycle would fail its ack: counted as an error
        request.timeout_ms = 0;
    }

    /// A cycle's answer: 200 also for a logical failure, then {"success":false,"error":..}.
    static queen::Status read_cycle_answer(const client::HttpRequest& request,
                                           const client::HttpResponse& response) {
        QUEEN_TRY(client::check_http_status(request, response));
        std::string_view object;
        bool is_success = false;
        std::string error;
        if (!json::scan_json(response.body, object) ||
            !json::for_each_member(object, [&](std::string_view key, std::string_view raw) {
                if (key == "success") {
                    is_success = json::raw_to_bool(raw);
                } else if (key == "error") {
                    error = json::raw_to_text(raw);
                }
                return true;
            })) {
            return queen::Error{client::Errc::bad_response, "cycle: not a JSON object"};
        }
        if (!is_success) {
            return queen::Error{client::Errc::rejected, error.empty() ? "not committed" : error};
        }
        return {};
    }

    /// four_requests: request `step_` of the loop (ack, kv.set, push, timer.set), each alone.
    void build_step(client::OwnedRequest& request) {
        const auto& operations = transaction_.operations;
        const std::size_t count = moved_;
        single_.operations.resize(1);
        switch (step_) {
            case 0:
                // Each ack names the group the message was popped for (as Ack::of does in the
                // one-call transaction); a batch-wide group would override it.
                client::build_ack_batch(popped_.messages, client::AckStatus::completed, {},
                                        request);
                break;
            case 1: single_.operations[0] = operations[count + 1]; break;  // kv.set
            case 2: {
                const auto& items = std::get<client::TransactionPush>(operations[count]).items;
                const queen::Status built = client::build_push(items, false, driver_.ids, request);
                QUEEN_ASSERT(built.has_value(), "a popped batch builds a push");
                break;
            }
            default: single_.operations[0] = operations[count + 2]; break;  // timer.set
        }
        if (step_ == 1 || step_ == 3) {
            const queen::Status built =
                client::build_transaction(single_, false, driver_.ids, request);
            QUEEN_ASSERT(built.has_value(), "one operation builds a transaction");
        }
    }

    queen::Status read_step(const client::HttpRequest& request,
                            const client::HttpResponse& response) {
        switch (step_) {
            case 0: return client::read_ack_batch_answer(request, response, moved_, acked_);
            case 2: return client::read_push_answer(request, response, moved_, pushed_);
            default: return client::read_transaction_answer(request, response, committed_);
        }
    }

    /// four_requests, after step_'s answer was read: the first ack or push item of it that
    /// failed, as an error text, or "".
    std::string step_item_failure() const {
        if (step_ == 0) {
            for (const client::AckResult& result : acked_) {
                if (!result.is_success) {
                    return "ack: " +
                           (result.error.empty() ? std::string("not acked") : result.error);
                }
            }
        } else if (step_ == 2) {
            for (const client::PushResult& result : pushed_) {
                if (result.status != PushStatus::queued) {
                    return item_failure(result);
                }
            }
        }
        return {};
    }

    /// Whether another batch should be popped: not stopping, before the deadline and the count.
    bool is_pop_wanted(std::int64_t now_ns) const {
        if (is_claim_refused_ || run_.is_stopping() || now_ns >= deadline_ns_) {
            return false;
        }
        return run_.target == 0 || run_.transactions_claimed.load(relaxed) < run_.target;
    }

    Run& run_;
    Driver& driver_;
    std::int64_t deadline_ns_;
    PopRequest pop_;
    client::OwnedRequest pop_request_;  // built once: every pop of this agent is the same
    client::NextPop next_pop_;          // one_call_next: the transaction's pop, the same as pop_
    client::PopResult popped_;
    client::TransactionRequest transaction_;
    client::TransactionResult committed_;
    client::TransactionRequest single_;       // four_requests: a one-operation transaction
    std::vector<client::AckResult> acked_;    // four_requests: the ack's answer
    std::vector<client::PushResult> pushed_;  // four_requests: the push's answer
    std::size_t step_ = 0;                    // four_requests: the request of the loop
    bool is_commit_due_ = false;              // popped a batch; its transaction goes next
    bool is_pop_following_ = false;   // the transaction being sent carries the next pop behind it
    bool is_next_asked_ = false;      // the transaction being sent pops the next batch itself
    bool is_claim_refused_ = false;   // the count was reached: stop
    std::int64_t pop_start_ns_ = 0;   // when the last pop was sent
    std::int64_t loop_start_ns_ = 0;  // when the pop of the batch in hand was sent
    std::uint64_t bytes_ = 0;
    std::uint64_t moved_ = 0;
    std::string state_value_;  // stream_cycle, ack_kv_push: the worker's state this loop
    std::string id_;           // stream_cycle: a push item's generated transactionId
    static constexpr std::int64_t state_value_bytes = 64;
};

/// Steps::stream_cycle: the query the workers' cycles name, with fresh state (an earlier run's
/// query is reset first: a new epoch, its rows dropped), and its epoch.
queen::Result<void> register_cycle_query(Run& run) {
    const std::string name = run.options.queue + "-cycle";
    auto reset = run.client.post_json(
        "/api/v1/streams/queries/" + client::percent_encode(name) + "/reset", "{}");
    if (!reset && !is_not_found(reset.error())) {
        return reset.error();
    }
    json::Writer body;
    body.begin_object()
        .field("name", name)
        .field("source_queue", run.options.queue)
        .field("config_hash", "bench-stream-cycle")
        .end_object();
    QUEEN_TRY(auto answer, run.client.post_json("/streams/v1/queries", body.take()));
    std::string_view object;
    if (json::scan_json(answer, object)) {
        (void)json::for_each_member(object, [&run](std::string_view key, std::string_view raw) {
            if (key == "query_id") {
                run.stream_query_id = json::raw_to_text(raw);
            } else if (key == "epoch") {
                run.stream_epoch = static_cast<std::uint64_t>(json::raw_to_integer(raw));
            }
            return true;
        });
    }
    if (run.stream_query_id.empty()) {
        return queen::Error{client::Errc::bad_response,
                            "streams register: no query_id in " + answer};
    }
    return {};
}

}  // namespace

queen::Result<Report> run_transaction(Run& run, std::int64_t deadline_ns) {
    const Steps steps = run.options.steps;
    run.group = run.options.consumer_group;
    if (run.group.empty() && (steps == Steps::stream_cycle || steps == Steps::ack_kv_push)) {
        run.group = stream_steps_group;
    }
    if (steps == Steps::stream_cycle) {
        QUEEN_TRY(register_cycle_query(run));
    }
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
    report.latency_of = describe_transaction_loop(run.options.steps, run.options.is_pipelined);
    run.progress.phase.store("run");
    const CpuWindow cpu(run.options);
    const std::int64_t start_ns = run.clock.monotonic_ns();
    report.latency_ns = run_agents(
        run, run.options.consumers, [&run, deadline_ns](std::int64_t worker, Driver& driver) {
            return std::make_unique<TransactionAgent>(run, driver, worker, deadline_ns);
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
    if (run.options.steps == Steps::one_call_next) {
        // How often a worker fell back to its waiting pop (0 while each transaction finds the
        // batch it pushed).
        report.metrics.push_back(
            {"empty_next_pops", static_cast<double>(run.empty_next_pops.load())});
    }
    cpu.add_to(report);
    return report;
}

}  // namespace queen::bench::detail
