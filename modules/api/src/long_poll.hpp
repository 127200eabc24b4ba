// api/src/long_poll.hpp — the one driver of every request that waits for a change: a pop with
// wait=true, a lock acquire with waitMs, the wait for the reply of POST /api/v1/request. It
// submits a command, and while the answer is "not yet" parks until the backend reports a change
// of a wait key, submits again, and answers at the deadline; it rides through a leader change
// (no leader, a busy one, one replaced before it answered) by submitting again after a pause.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "context.hpp"
#include "queen/engine/command.hpp"
#include "routes.hpp"

namespace queen::api::detail {

/// What one result of a long poll's command means (LongPoll::Spec::classify answers it).
struct Verdict {
    /// True: the poll ends with `answer`. False: nothing to answer yet.
    bool is_final = false;
    /// For a final verdict, the answer. Otherwise the answer should the wait end before a later
    /// result says more (the lock's holder of a waiting acquire), and the answer now when the
    /// poll does not wait; empty: the poll's own (Spec::at_deadline). Runs on the request's I/O
    /// thread (Responder::complete_with), so formatting and decrypting happen there, and only
    /// when the poll answers with it (count what it delivers inside it).
    std::function<Response()> answer;

    /// Answer now with what `answer` makes.
    [[nodiscard]] static Verdict final(std::function<Response()> answer) {
        return Verdict{true, std::move(answer)};
    }
    /// Park until the wait key changes, then submit again; `at_deadline` as described above.
    [[nodiscard]] static Verdict wait(std::function<Response()> at_deadline = {}) {
        return Verdict{false, std::move(at_deadline)};
    }
};

/// One waiting request from arrival to answer.
///
/// The loop: register a wait on `wait_key` (Backend::wait_for_change, up to the deadline),
/// submit the command, hand its result to `classify`. A final verdict answers. A waiting one
/// parks until the wait fires: a change of the key submits again, the deadline answers the last
/// waiting verdict's answer (or Spec::at_deadline). The wait is registered before each command
/// is submitted, so a change applied after that command cannot be missed: its wake-up arrives
/// while the command is in flight (remembered; the poll submits again as soon as the result
/// says "not yet") or while the poll is parked.
///
/// Leader changes: a backend error Errc::not_leader, Errc::busy or Errc::timeout (no leader, a
/// busy one, or one replaced before it answered) while the wait lasts pauses the poll for
/// retry_pause_ms (a change of the key ends the pause early) and submits again; the error is
/// the answer only when the deadline comes first. not_leader and busy never reached the log,
/// so submitting again is always safe; after a timeout the command may have been applied, and
/// each caller says why submitting it again is acceptable for its command. A poll that does
/// not wait (Spec::is_waiting false) answers every error at once, as any request does. Other
/// errors (unknown tenant, poisoned, shutting down) and ErrorResults are answered at once
/// (error_response, error_result_response).
///
/// Disconnect: a waiting poll whose client leaves stops (its wait is cancelled and it submits
/// nothing more); a command already in flight still runs and its result is dropped.
///
/// Metrics: Metrics::long_polls_waiting counts a waiting poll with Spec::is_counted (the pops)
/// from start() until it answers or its client leaves; Metrics::long_poll_retries counts the
/// submissions after a pause.
///
/// Threads: results, wake-ups and deadlines arrive on whatever thread the backend uses; the
/// mutex guards the phase and backend calls are made outside it (they may call back
/// synchronously). Answers are completed with Responder::complete_with.
///
/// Use (the waiting pop of pop_routes.cpp, shortened):
///
///     LongPoll::Spec spec;
///     spec.tenant = tenant;
///     spec.command = pop;  // a copy is submitted on every try
///     spec.wait_key = pop.queue;
///     spec.is_waiting = true;
///     spec.wait_ms = 30'000;
///     spec.classify = [](engine::CommandResult& result) {
///         auto& popped = std::get<queues::PopResult>(result);
///         if (popped.messages.empty()) return Verdict::wait();
///         return Verdict::final([popped] { return Response::json(200, format_pop(...)); });
///     };
///     spec.at_deadline = [] { return Response::empty(204); };
///     LongPoll::start(context, std::move(spec), std::move(responder));
class LongPoll : public std::enable_shared_from_this<LongPoll> {
public:
    /// How long a waiting poll pauses after a retryable error before it submits again.
    static constexpr std::int64_t retry_pause_ms = 100;

    /// What the caller supplies: the command and how to read its results.
    struct Spec {
        std::string tenant;
        /// Submitted (a copy of it) on every try.
        engine::CommandBody command;
        /// The key whose changes may turn "not yet" into an answer: a queue, a
        /// queues::matching_wait_key, an engine::lock_wait_key.
        std::string wait_key;
        /// False: one try; a waiting verdict answers its answer (or at_deadline) at once.
        bool is_waiting = false;
        /// How long the poll waits from start() (with is_waiting; 0: its deadline is now).
        std::int64_t wait_ms = 0;
        /// Counted in Metrics::long_polls_waiting while it waits.
        bool is_counted = false;
        /// Reads a result of the command (neither a backend error nor an ErrorResult). Runs on
        /// the thread that completed the command: it must not block.
        std::function<Verdict(engine::CommandResult&)> classify;
        /// The answer when the wait ends with nothing better (see Verdict::answer).
        std::function<Response()> at_deadline;
    };

    /// Starts the poll: it answers `responder` exactly once (or not at all when its client
    /// left). The poll keeps itself alive while it waits.
    static void start(ContextPtr context, Spec spec, Responder responder);

    /// Public for std::make_shared: call start().
    LongPoll(ContextPtr context, Spec spec, Responder responder);

private:
    enum class Phase : std::uint8_t { arming, submitting, parked, pausing, done };

    void begin();
    void arm_and_submit();
    void on_result(Result<engine::CommandResult> result);
    void on_verdict(Verdict verdict);
    bool pause_before_retry(const Error& error);
    void on_wake(std::uint64_t generation, bool timed_out);
    void on_client_gone();
    /// Registers the wait of `generation` until `deadline_ms` and makes it the current one
    /// (cancelling the one before); a poll that ended meanwhile cancels it instead.
    void register_wait(std::uint64_t generation, std::int64_t deadline_ms);
    /// Ends the poll (cancels its wait); false when it had ended already.
    bool close();
    /// Ends the poll with what `answer` makes, unless it had ended already.
    void finish(std::function<Response()> answer);
    void finish_error(const Error& error);

    ContextPtr context_;
    Spec spec_;
    Responder responder_;
    std::int64_t deadline_ms_ = 0;

    std::mutex mutex_;
    Phase phase_ = Phase::arming;
    /// Numbers the waits: a wake-up of a wait that was replaced is ignored.
    std::uint64_t generation_ = 0;
    bool is_woken_ = false;      ///< a change arrived while the command was in flight
    bool is_timed_out_ = false;  ///< the deadline passed while the command was in flight
    std::function<Response()> waiting_answer_;  ///< the last waiting verdict's answer
    /// The error that started the pause in progress: the answer if the deadline ends it.
    std::optional<Error> failure_;
    std::unique_ptr<WaitToken> token_;
};

/// A 500 for a command result of a type the caller did not expect.
[[nodiscard]] Response unexpected_result(Context& context);

}  // namespace queen::api::detail
