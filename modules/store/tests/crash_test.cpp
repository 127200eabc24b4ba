// modules/store/tests/crash_test.cpp — SIGKILL a writer process at random points, reopen, check
// that every acknowledged txn is there and no txn is partly there.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "helpers.hpp"
#include "queen/core/crc32c.hpp"
#include "queen/core/rng.hpp"
#include "queen/store/env.hpp"
#include "queen/store/keys.hpp"
#include "queen/testing/support.hpp"

namespace queen::store::test {
namespace {

constexpr std::uint64_t delete_lag_txns = 30;
volatile std::uint64_t busy_sink = 0;  // keeps the pre-kill busy loop from being optimized out

/// In the writer process: when >= 0, the number of crash points to pass before SIGKILLing
/// itself. Crash points sit between every two store calls of a txn and between commit and ack,
/// so self-kills cover each gap exactly, where external kills land mostly inside LMDB.
std::int64_t crash_countdown = -1;
void crash_point() {
    if (crash_countdown >= 0 && crash_countdown-- == 0) {
        ::raise(SIGKILL);
    }
}  // txn n deletes the rows txn n-30 wrote

struct Generated {
    std::vector<std::pair<Bytes, Bytes>> rows;  // put into "rows"
    std::pair<Bytes, Bytes> hot;                // put into "hot" (overwrites)
    std::uint64_t delete_rows_of = 0;           // txn whose rows are deleted; 0 = none
};

Bytes key_of(std::uint64_t txn_index, std::uint32_t row) {
    KeyBuilder key;
    key.u64be(txn_index).u32be(row);
    return Bytes(key.span().begin(), key.span().end());
}

/// Txn `index` (1-based) of the workload, a pure function of (seed, index).
Generated generate(std::uint64_t seed, std::uint64_t index) {
    queen::Rng rng(seed ^ (index * 0x9E3779B97F4A7C15ULL));
    Generated out;
    const auto row_count = 1 + rng.below(24);
    for (std::uint32_t row = 0; row < row_count; ++row) {
        // Mostly small values, some larger than half a page (overflow pages).
        const auto size = rng.chance(0.15) ? rng.between(2100, 9000) : rng.below(300);
        Bytes value(size);
        for (std::size_t at = 0; at < size; at += 8) {
            const std::uint64_t word = rng.next();
            std::memcpy(value.data() + at, &word, std::min<std::size_t>(8, size - at));
        }
        out.rows.emplace_back(key_of(index, row), std::move(value));
    }
    const auto hot_slot = static_cast<std::uint32_t>(rng.below(16));
    KeyBuilder hot_key;
    hot_key.u32be(hot_slot);
    const auto seq = u64be_key(index);
    out.hot = {Bytes(hot_key.span().begin(), hot_key.span().end()), Bytes(seq.begin(), seq.end())};
    if (index > delete_lag_txns) {
        out.delete_rows_of = index - delete_lag_txns;
    }
    return out;
}

std::uint32_t digest_step(std::uint32_t digest, const Generated& txn) {
    for (const auto& [key, value] : txn.rows) {
        digest = crc32c(key, digest);
        digest = crc32c(value, digest);
    }
    digest = crc32c(txn.hot.first, digest);
    return crc32c(txn.hot.second, digest);
}

struct Tables {
    Table rows;
    Table hot;
    Table meta;
};

queen::Result<Tables> open_tables(Env& env) {
    Tables tables;
    QUEEN_TRY(tables.rows, env.open_table("rows"));
    QUEEN_TRY(tables.hot, env.open_table("hot"));
    QUEEN_TRY(tables.meta, env.open_table("meta"));
    return tables;
}

queen::Result<std::uint64_t> read_u64(const Txn& txn, Table table, std::string_view key) {
    QUEEN_TRY(auto value, txn.get(table, bytes(key)));
    if (!value.has_value()) {
        return std::uint64_t{0};
    }
    return KeyReader(*value).u64be();
}

/// Applies the next txn of the workload in `txn` (reading where the previous one left off).
queen::Result<std::uint64_t> apply_next(WriteTxn& txn, const Tables& tables, std::uint64_t seed) {
    QUEEN_TRY(const std::uint64_t applied, read_u64(txn, tables.meta, "applied_index"));
    QUEEN_TRY(const std::uint64_t digest, read_u64(txn, tables.meta, "digest"));
    const std::uint64_t index = applied + 1;
    const Generated generated = generate(seed, index);
    for (const auto& [key, value] : generated.rows) {
        crash_point();
        QUEEN_TRY(txn.put(tables.rows, key, value));
    }
    crash_point();
    QUEEN_TRY(txn.put(tables.hot, generated.hot.first, generated.hot.second));
    if (generated.delete_rows_of != 0) {
        QUEEN_TRY(auto cursor, txn.cursor(tables.rows));
        const auto prefix = u64be_key(generated.delete_rows_of);
        QUEEN_TRY(auto entry, cursor.seek(prefix));
        while (entry.has_value() && entry->key.size() >= 8 &&
               std::equal(prefix.begin(), prefix.end(), entry->key.begin())) {
            crash_point();
            QUEEN_TRY(cursor.del());
            QUEEN_TRY(entry, cursor.next());
        }
    }
    const auto next_digest =
        static_cast<std::uint64_t>(digest_step(static_cast<std::uint32_t>(digest), generated));
    crash_point();
    QUEEN_TRY(txn.put(tables.meta, bytes("applied_index"), u64be_key(index)));
    crash_point();
    QUEEN_TRY(txn.put(tables.meta, bytes("digest"), u64be_key(next_digest)));
    crash_point();
    return index;
}

/// The writer process: commits txns forever, writing each committed index to `ack_fd`.
[[noreturn]] void run_writer(const std::filesystem::path& dir, const Options& options,
                             std::uint64_t seed, int ack_fd, std::int64_t self_kill_after) {
    crash_countdown = self_kill_after;
    auto env = Env::open(dir, options);
    if (!env) {
        ::_exit(10);
    }
    auto tables = open_tables(*env);
    if (!tables) {
        ::_exit(11);
    }
    for (;;) {
        auto index = env->write([&](WriteTxn& txn) { return apply_next(txn, *tables, seed); });
        if (!index) {
            ::_exit(12);
        }
        crash_point();  // committed, not yet acknowledged
        const std::uint64_t acked = *index;
        if (::write(ack_fd, &acked, sizeof acked) != static_cast<ssize_t>(sizeof acked)) {
            ::_exit(13);
        }
    }
}

/// What the files must hold after txns 1..applied: advanced as `applied` grows, never rebuilt.
struct Model {
    std::uint64_t applied = 0;
    std::uint32_t digest = 0;
    std::map<Bytes, Bytes> rows;
    std::map<Bytes, Bytes> hot;

    void advance_to(std::uint64_t seed, std::uint64_t target) {
        for (; applied < target; ++applied) {
            const Generated generated = generate(seed, applied + 1);
            for (const auto& [key, value] : generated.rows) {
                rows[key] = value;
            }
            hot[generated.hot.first] = generated.hot.second;
            if (generated.delete_rows_of != 0) {
                const Bytes from = key_of(generated.delete_rows_of, 0);
                const Bytes to = key_of(generated.delete_rows_of + 1, 0);
                rows.erase(rows.lower_bound(from), rows.lower_bound(to));
            }
            digest = digest_step(digest, generated);
        }
    }
};

/// Describes the first difference between a table and the model, or returns "".
std::string first_difference(const Txn& txn, Table table, const std::map<Bytes, Bytes>& expected) {
    auto cursor = must(txn.cursor(table));
    auto want = expected.begin();
    std::uint64_t position = 0;
    for (auto entry = must(cursor.first()); entry.has_value(); entry = must(cursor.next())) {
        if (want == expected.end()) {
            return "extra entry at position " + std::to_string(position);
        }
        if (Bytes(entry->key.begin(), entry->key.end()) != want->first) {
            return "other key at position " + std::to_string(position);
        }
        if (Bytes(entry->value.begin(), entry->value.end()) != want->second) {
            return "other value at position " + std::to_string(position);
        }
        ++want;
        ++position;
    }
    if (want != expected.end()) {
        return "missing entries from position " + std::to_string(position);
    }
    if (must(txn.stats(table)).entries != position) {
        return "stats count " + std::to_string(must(txn.stats(table)).entries) +
               " != entries walked " + std::to_string(position);
    }
    return "";
}

/// Reopens the files and compares everything with the model advanced to the applied index.
void verify(const std::filesystem::path& dir, std::uint64_t seed, std::uint64_t last_acked,
            Model& model) {
    Env env = must(Env::open(dir, Options{}));
    const Tables tables = must(open_tables(env));
    auto txn = must(env.begin_read());
    const std::uint64_t applied = must(read_u64(txn, tables.meta, "applied_index"));
    INFO("applied_index=" << applied << " last acknowledged=" << last_acked);
    REQUIRE(applied >= last_acked);      // nothing acknowledged is lost
    REQUIRE(applied <= last_acked + 1);  // at most the txn in flight committed unacknowledged
    REQUIRE(applied >= model.applied);   // committed txns never disappear later
    model.advance_to(seed, applied);
    REQUIRE(must(read_u64(txn, tables.meta, "digest")) == model.digest);
    REQUIRE(first_difference(txn, tables.rows, model.rows) == "");
    REQUIRE(first_difference(txn, tables.hot, model.hot) == "");
}

TEST_CASE("store: SIGKILL of a writer mid-txn loses no acknowledged txn and leaves no partial one",
          "[store][crash]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    const auto iterations = queen::testing::env_int("QUEEN_STORE_CRASH_ITERATIONS", 120);
    queen::Rng rng(seed);
    queen::testing::TempDir dir;
    const auto state_dir = dir.path() / "state";
    std::uint64_t last_acked = 0;
    std::uint64_t kills_mid_open = 0;
    Model model;

    for (std::int64_t iteration = 0; iteration < iterations; ++iteration) {
        INFO("iteration " << iteration);
        Options options;
        // A tiny initial map makes the writer grow the map (and die while growing) often.
        options.map_size_bytes = 64 << 10;
        options.map_size_bytes_max = 256 << 20;
        const SyncMode modes[] = {SyncMode::durable, SyncMode::no_meta_sync, SyncMode::no_sync};
        options.sync_mode = modes[rng.below(3)];
        // Half the runs the writer kills itself at a seeded crash point; the others are
        // killed from outside after some acks plus a random spin (inside LMDB calls mostly).
        const bool is_self_kill = rng.chance(0.5);
        const std::int64_t self_kill_after =
            is_self_kill ? static_cast<std::int64_t>(rng.below(300)) : -1;
        const std::uint64_t acks_before_kill = is_self_kill ? 0 : rng.below(25);
        const std::uint64_t spin = rng.below(400000);
        INFO("sync mode " << to_string(options.sync_mode) << ", "
                          << (is_self_kill ? "self-kill after crash points: "
                                           : "external kill after acks: ")
                          << (is_self_kill ? static_cast<std::uint64_t>(self_kill_after)
                                           : acks_before_kill));

        int fds[2];
        REQUIRE(::pipe(fds) == 0);
        const pid_t child = ::fork();
        REQUIRE(child >= 0);
        if (child == 0) {
            ::close(fds[0]);
            run_writer(state_dir, options, seed, fds[1], self_kill_after);
        }
        ::close(fds[1]);
        std::uint64_t acked = 0;
        std::uint64_t seen = 0;
        while (seen < acks_before_kill) {
            const ssize_t got = ::read(fds[0], &acked, sizeof acked);
            REQUIRE(got == static_cast<ssize_t>(sizeof acked));
            last_acked = acked;
            ++seen;
        }
        if (!is_self_kill) {
            // Spread the kill over the writer's next txn: put, cursor delete, growth, commit.
            queen::Rng busy(spin);
            for (std::uint64_t i = 0; i < spin; ++i) {
                busy_sink = busy.next();
            }
            REQUIRE(::kill(child, SIGKILL) == 0);
        }
        int status = 0;
        REQUIRE(::waitpid(child, &status, 0) == child);
        INFO("child status " << status);
        REQUIRE(WIFSIGNALED(status));  // it must not have died of an error of its own
        // Acks written before the kill are still in the pipe (a self-killed writer's are all
        // there).
        for (;;) {
            const ssize_t got = ::read(fds[0], &acked, sizeof acked);
            if (got <= 0) {
                break;
            }
            REQUIRE(got == static_cast<ssize_t>(sizeof acked));
            last_acked = acked;
            ++seen;
        }
        ::close(fds[0]);
        if (seen == 0) {
            ++kills_mid_open;
        }
        verify(state_dir, seed, last_acked, model);
    }
    INFO("txns acknowledged=" << last_acked << " kills before any ack=" << kills_mid_open);
    CHECK(last_acked > static_cast<std::uint64_t>(iterations));
}

}  // namespace
}  // namespace queen::store::test
