// examples/reminders.cpp — delayed messages and timers. ONE transaction pushes a message that
// becomes visible --delay-ms later, sets a one-shot timer due then too, and a repeating timer
// (every --interval-ms), all delivering to --queue. The program then pops what arrives and
// prints, per message, when it was due, when the broker delivered it (its createdAt) and when it
// was received: never before it was due. After --repeats firings it cancels the repeating timer.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "common.hpp"
#include "queen/client/client.hpp"
#include "queen/core/iso_time.hpp"

namespace {
constexpr const char* usage =
    "usage: example_reminders [--url http://127.0.0.1:6632] [--queue reminders]\n"
    "                         [--delay-ms 500] [--interval-ms 300] [--repeats 3]\n";

std::string iso(std::int64_t us) {
    char text[queen::iso_time_bytes_max];
    return {text, queen::write_iso_time(text, us / 1000, false)};
}

std::int64_t now_us() {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}
}  // namespace

int main(int argc, char** argv) {
    const auto flags = examples::parse_flags(argc, argv, usage);
    const queen::client::ClientOptions options = examples::client_options(flags);
    const std::string queue = examples::flag(flags, "queue", "reminders");
    const long delay_ms = examples::number_flag(flags, "delay-ms", 500);
    const long interval_ms = examples::number_flag(flags, "interval-ms", 300);
    const long repeats = examples::number_flag(flags, "repeats", 3);
    if (interval_ms < 10 || repeats < 1) {
        std::fprintf(stderr, "--interval-ms must be at least 10, --repeats at least 1\n%s", usage);
        return 2;
    }
    queen::client::Client client{options};

    // Ids and payloads carry a tag of this run, so a rerun is not confused by an earlier one.
    const std::string tag = client.generate_uuid_v7().substr(24);
    const auto payload = [&](const char* kind) {
        return std::string("{\"kind\":\"") + kind + "\",\"run\":\"" + tag + "\"}";
    };
    queen::client::TimerSet every;
    every.id = "every-" + tag;
    every.queue = queue;
    every.payload_json = payload("repeating");
    every.delay_ms = interval_ms;  // first firing one interval after the commit
    every.interval_ms = interval_ms;
    auto set = client.transaction()
                   .queue(queue)
                   .push(payload("delayed"), std::chrono::milliseconds(delay_ms))  // results[0]
                   .timer("once-" + tag, std::chrono::milliseconds(delay_ms), queue,
                          payload("one-shot"))  // results[1]
                   .timer(std::move(every))     // results[2]
                   .commit();
    if (!set) {
        std::fprintf(stderr, "transaction failed: %s\n", set.error().message().c_str());
        return 1;
    }
    const std::int64_t delayed_due = examples::iso_to_us(set->results[0].visible_at);
    const std::int64_t once_due = examples::iso_to_us(set->results[1].due_at);
    const std::int64_t every_due = examples::iso_to_us(set->results[2].due_at);
    std::printf("run %s: delayed message due %s, once-%s due %s, every-%s from %s every %ld ms\n",
                tag.c_str(), set->results[0].visible_at.c_str(), tag.c_str(),
                set->results[1].due_at.c_str(), tag.c_str(), set->results[2].due_at.c_str(),
                interval_ms);

    queen::client::PopRequest pop;
    pop.queue = queue;
    pop.batch = 10;
    pop.is_wait = true;
    pop.timeout_ms = 10'000;
    long delayed = 0, once = 0, ticks = 0, early = 0;
    while (delayed == 0 || once == 0 || ticks < repeats) {
        auto popped = client.pop(pop);
        if (!popped || popped->messages.empty()) {
            std::fprintf(stderr, "nothing arrived: %s\n",
                         popped ? "within 10 s" : popped.error().message().c_str());
            return 1;
        }
        const std::int64_t received = now_us();
        std::vector<queen::client::Ack> acks;
        for (const auto& message : popped->messages) {
            acks.push_back(queen::client::Ack::of(message));
            if (examples::json_member(message.data_json, "run") != tag) {
                continue;  // left over from an earlier run
            }
            const std::string kind = examples::json_member(message.data_json, "kind");
            std::int64_t due = 0;
            if (kind == "delayed") {
                ++delayed;
                due = delayed_due;
            } else if (kind == "one-shot") {
                ++once;
                due = once_due;
            } else {
                // The n-th firing's transactionId is "<timer id>#n", due n - 1 intervals after
                // the first.
                ++ticks;
                const auto hash = message.transaction_id.rfind('#');
                due = every_due + (std::atol(message.transaction_id.c_str() + hash + 1) - 1) *
                                      interval_ms * 1000;
            }
            const std::int64_t delivered = examples::iso_to_us(message.created_at);
            early += delivered < due || received < due ? 1 : 0;
            std::printf("%-28s due %s, delivered %+.1f ms, received %+.1f ms after it\n",
                        (kind + " " + message.transaction_id).c_str(), iso(due).c_str(),
                        (delivered - due) / 1000.0, (received - due) / 1000.0);
        }
        if (auto acked = client.ack_batch(acks, popped->consumer_group); !acked) {
            std::fprintf(stderr, "ack failed: %s\n", acked.error().message().c_str());
            return 1;
        }
    }
    auto cancelled = client.timer_cancel("every-" + tag);
    if (!cancelled || !*cancelled) {
        std::fprintf(stderr, "cancel failed: %s\n",
                     cancelled ? "no such timer" : cancelled.error().message().c_str());
        return 1;
    }
    std::printf("delayed %ld, one-shot %ld, repeating %ld then cancelled, %ld early\n", delayed,
                once, ticks, early);
    return early == 0 ? 0 : 1;
}
