// examples/single_worker.cpp — one worker at a time, with fencing. Run several instances: each
// round, an instance takes the lock (a waiting acquire: the broker wakes it when the lock is
// free), appends "begin" and then "end" to a shared KV ledger, and releases the lock in the same
// transaction as its "end". Every ledger write is guarded by the grant's fencing token, so an
// instance that lost its lock (paused past the TTL) cannot write any more: `--stale-demo 1`
// shows that refusal instead of running rounds.
#include <unistd.h>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>

#include "common.hpp"
#include "queen/client/client.hpp"

namespace {
constexpr const char* usage =
    "usage: example_single_worker [--url http://127.0.0.1:6632] [--lock ledger]\n"
    "                             [--owner worker-<pid>] [--bucket single_worker] [--key ledger]\n"
    "                             [--rounds 5] [--ttl-ms 10000] [--work-ms 20] [--stale-demo 0]\n";

using namespace std::chrono_literals;

struct Ledger {
    queen::client::Client& client;
    std::string bucket;
    std::string key;

    /// Appends {"token","owner","step"} to the ledger's "events", guarded by `grant` (and
    /// releasing it when `is_last`). Errc::conflict: the grant is not current any more (or the
    /// ledger changed under us, which the lock should make impossible).
    queen::Status append(const queen::client::LockGrant& grant, const std::string& step,
                         bool is_last) {
        std::uint64_t version = 0;
        std::string events = "[]";
        if (auto current = client.kv_get(bucket, key); current) {
            version = current->version;
            events = examples::json_member(current->value_json, "events");
        } else if (queen::client::http_status_of(current.error()) != 404) {
            return current.error();
        }
        events.pop_back();  // the closing ']'
        events += std::string(events.size() > 1 ? "," : "") +
                  "{\"token\":" + std::to_string(grant.token) + ",\"owner\":";
        queen::json::scan::append_quoted(events, grant.owner);
        events += ",\"step\":\"" + step + "\"}]";
        auto transaction = client.transaction();
        transaction.kv_set(bucket, key, "{\"events\":" + events + "}", version).guard(grant);
        if (is_last) {
            transaction.lock_release(grant);  // after the guarded write, in the same entry
        }
        auto committed = transaction.commit();
        return committed ? queen::Status{} : queen::Status{committed.error()};
    }
};

/// One instance that lost its lock: its grant expires, another owner gets the lock, and the old
/// grant's write is refused. Returns 0 when the broker refused it.
int stale_demo(queen::client::Client& client, Ledger& ledger, const std::string& lock,
               const std::string& owner) {
    auto slow = client.lock_acquire(lock, owner + "-slow", 200ms, 30s);
    // "Pausing" past the TTL: this waiting acquire is granted once the broker expires `slow`.
    auto fast = slow ? client.lock_acquire(lock, owner + "-fast", 10s, 30s) : slow;
    if (!fast) {
        std::fprintf(stderr, "acquire failed: %s\n", fast.error().message().c_str());
        return 1;
    }
    auto refused = ledger.append(*slow, "begin", false);
    std::printf("stale token %llu (%s): %s; current token %llu (%s)\n",
                static_cast<unsigned long long>(slow->token), slow->owner.c_str(),
                refused ? "ACCEPTED" : ("refused, " + refused.error().message()).c_str(),
                static_cast<unsigned long long>(fast->token), fast->owner.c_str());
    auto begin = ledger.append(*fast, "begin", false);
    auto end = begin ? ledger.append(*fast, "end", true) : begin;
    if (!end) {
        std::fprintf(stderr, "current holder's write failed: %s\n", end.error().message().c_str());
        return 1;
    }
    return refused ? 1 : 0;
}
}  // namespace

int main(int argc, char** argv) {
    const auto flags = examples::parse_flags(argc, argv, usage);
    const queen::client::ClientOptions options = examples::client_options(flags);
    const std::string lock = examples::flag(flags, "lock", "ledger");
    const std::string owner = examples::flag(flags, "owner", "worker-" + std::to_string(getpid()));
    const long rounds = examples::number_flag(flags, "rounds", 5);
    const auto ttl = std::chrono::milliseconds(examples::number_flag(flags, "ttl-ms", 10'000));
    const auto work = std::chrono::milliseconds(examples::number_flag(flags, "work-ms", 20));
    queen::client::Client client{options};
    Ledger ledger{client, examples::flag(flags, "bucket", "single_worker"),
                  examples::flag(flags, "key", "ledger")};
    if (examples::number_flag(flags, "stale-demo", 0) != 0) {
        return stale_demo(client, ledger, lock, owner);
    }

    for (long round = 1; round <= rounds; ++round) {
        auto grant = client.lock_acquire(lock, owner, ttl, 30s);  // waits while another holds it
        if (!grant) {
            std::fprintf(stderr, "acquire failed: %s\n", grant.error().message().c_str());
            return 1;
        }
        auto begun = ledger.append(*grant, "begin", false);
        std::this_thread::sleep_for(work);  // the unit of work the lock protects
        auto ended = begun ? ledger.append(*grant, "end", true) : begun;
        if (!ended) {
            // Our grant expired mid-work (a TTL shorter than the work) or the ledger changed.
            std::fprintf(stderr, "%s round %ld (token %llu): %s\n", owner.c_str(), round,
                         static_cast<unsigned long long>(grant->token),
                         ended.error().message().c_str());
            return 1;
        }
        std::printf("%s round %ld: token %llu begin+end written\n", owner.c_str(), round,
                    static_cast<unsigned long long>(grant->token));
    }
    std::printf("%s: %ld rounds under lock %s\n", owner.c_str(), rounds, lock.c_str());
    return 0;
}
