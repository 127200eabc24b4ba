// modules/store/tests/checkpoint_test.cpp — SyncMode::checkpoint: a crash (process or power)
// comes back to exactly the last checkpoint, never to a torn file.
//
// A power loss is modelled by building the file the disk could hold: every page written since
// the checkpoint's flush independently either reached the disk or not (torn meta pages
// included). Without the read txn that pins the checkpointed snapshot, later txns overwrite its
// freed pages and such images open as a different (or broken) tree.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>

#include "helpers.hpp"
#include "queen/core/rng.hpp"
#include "queen/store/env.hpp"
#include "queen/store/keys.hpp"
#include "queen/testing/support.hpp"

namespace queen::store::test {
namespace {

namespace fs = std::filesystem;
using Model = std::map<std::string, std::map<Bytes, Bytes>>;
const std::array<const char*, 2> table_names = {"rows", "hot"};

Options checkpoint_options() {
    Options options;
    options.sync_mode = SyncMode::checkpoint;
    options.map_size_bytes = std::uint64_t{256} << 10;  // small: the map grows during the runs
    return options;
}

Bytes read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    REQUIRE(in.good());
    return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}
void write_file(const fs::path& path, const Bytes& content) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(content.data()),
              static_cast<std::streamsize>(content.size()));
    REQUIRE(out.good());
}

Model dump(Env& env) {
    Model out;
    auto txn = must(env.begin_read());
    for (const char* name : table_names) {
        const Table table = must(env.open_table(name));
        auto& rows = out[name];
        auto cursor = must(txn.cursor(table));
        for (auto entry = must(cursor.first()); entry; entry = must(cursor.next())) {
            rows.emplace(Bytes(entry->key.begin(), entry->key.end()),
                         Bytes(entry->value.begin(), entry->value.end()));
        }
    }
    return out;
}

/// One random txn: puts (some values over a page: overflow pages), overwrites and deletes, so
/// pages are freed and reused.
void random_txn(Env& env, Rng& rng, Model& model) {
    Model next;
    must(env.write([&](WriteTxn& txn) -> Result<void> {
        next = model;  // a map-growth rerun starts again from the same model
        for (auto ops = 1 + rng.below(40); ops > 0; --ops) {
            const char* name = table_names[rng.below(table_names.size())];
            const Table table = must(env.open_table(name));
            auto& rows = next[name];
            KeyBuilder key;
            key.u32be(static_cast<std::uint32_t>(rng.below(3000)));
            const Bytes key_bytes(key.span().begin(), key.span().end());
            if (rng.chance(0.3) && !rows.empty()) {
                auto victim = rows.lower_bound(key_bytes);
                if (victim == rows.end()) {
                    victim = rows.begin();
                }
                QUEEN_TRY(txn.del(table, victim->first));
                rows.erase(victim);
                continue;
            }
            Bytes value(rng.chance(0.1) ? rng.between(2000, 9000) : rng.between(1, 200));
            for (auto& byte : value) {
                byte = static_cast<Byte>(rng.next());
            }
            QUEEN_TRY(txn.put(table, key_bytes, value));
            rows[key_bytes] = std::move(value);
        }
        return {};
    }));
    model = std::move(next);
}

void open_tables(Env& env) {
    for (const char* name : table_names) {
        must(env.open_table(name));
    }
}

/// In a child process: opens `dir` in checkpoint mode, commits `txns` random txns on top of
/// `from` (seeded), takes no checkpoint and dies without closing anything (a process crash).
void crash_after_more_txns(const fs::path& dir, const Model& from, std::uint64_t seed, int txns) {
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        auto env = Env::open(dir, checkpoint_options());
        Rng child_rng(seed);
        Model child_model = from;
        for (const char* name : table_names) {
            if (!env || !env->open_table(name)) {
                ::_exit(3);
            }
        }
        for (int i = 0; i < txns; ++i) {
            random_txn(*env, child_rng, child_model);
        }
        ::_exit(0);
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    REQUIRE((WIFEXITED(status) && WEXITSTATUS(status) == 0));
}

TEST_CASE("checkpoint: close and reopen keeps every commit", "[store][checkpoint]") {
    const testing::TempDir dir;
    const std::uint64_t seed = testing::seed_from_env();
    INFO("QUEEN_SEED=" << seed);
    Rng rng(seed);
    Model model;
    {
        auto env = must(Env::open(dir.path(), checkpoint_options()));
        open_tables(env);
        CHECK(must(env.stats()).checkpoint_txn_id == 0);  // the open took one, of the empty file
        must(env.sync(true));
        CHECK(must(env.stats()).checkpoint_txn_id == must(env.stats()).last_txn_id);
        for (int i = 0; i < 50; ++i) {
            random_txn(env, rng, model);
        }
        CHECK(fs::exists(dir.path() / "checkpoint.meta"));
    }
    auto env = must(Env::open(dir.path(), checkpoint_options()));
    open_tables(env);
    const auto stats = must(env.stats());
    CHECK(stats.checkpoint_txn_id == stats.last_txn_id);
    CHECK(dump(env) == model);
}

TEST_CASE("checkpoint: a process crash comes back to the last checkpoint", "[store][checkpoint]") {
    const testing::TempDir dir;
    const std::uint64_t seed = testing::seed_from_env();
    INFO("QUEEN_SEED=" << seed);
    Rng rng(seed);
    Model at_checkpoint;
    Model model;
    {
        auto env = must(Env::open(dir.path(), checkpoint_options()));
        open_tables(env);
        for (int i = 0; i < 40; ++i) {
            random_txn(env, rng, model);
        }
        must(env.sync(true));
        at_checkpoint = model;
    }
    crash_after_more_txns(dir.path(), at_checkpoint, rng.next(), 40);
    auto env = must(Env::open(dir.path(), checkpoint_options()));
    open_tables(env);
    CHECK(dump(env) == at_checkpoint);
    random_txn(env, rng, at_checkpoint);  // and it takes writes again
    CHECK(dump(env) == at_checkpoint);
}

TEST_CASE("checkpoint: another mode restores the checkpoint once, then drops it",
          "[store][checkpoint]") {
    const testing::TempDir dir;
    const std::uint64_t seed = testing::seed_from_env();
    INFO("QUEEN_SEED=" << seed);
    Rng rng(seed);
    Model model;
    {
        auto env = must(Env::open(dir.path(), checkpoint_options()));
        open_tables(env);
        for (int i = 0; i < 30; ++i) {
            random_txn(env, rng, model);
        }
    }
    crash_after_more_txns(dir.path(), model, rng.next(), 30);
    Options other = checkpoint_options();
    other.sync_mode = SyncMode::no_meta_sync;
    {
        auto env = must(Env::open(dir.path(), other));
        open_tables(env);
        CHECK(dump(env) == model);
        CHECK_FALSE(fs::exists(dir.path() / "checkpoint.meta"));
        for (int i = 0; i < 30; ++i) {
            random_txn(env, rng, model);
        }
    }
    // Back in checkpoint mode: nothing stale is restored over the no_meta_sync commits.
    auto env = must(Env::open(dir.path(), checkpoint_options()));
    open_tables(env);
    CHECK(dump(env) == model);
}

TEST_CASE("checkpoint: a power loss with any subset of later page writes comes back whole",
          "[store][checkpoint]") {
    const std::uint64_t seed = testing::seed_from_env();
    INFO("QUEEN_SEED=" << seed);
    Rng rng(seed);
    for (int round = 0; round < 12; ++round) {
        INFO("round " << round);
        const testing::TempDir live;
        const testing::TempDir crashed;
        Model model;
        Model at_checkpoint;
        Bytes disk_at_checkpoint;
        Bytes saved_meta;
        std::uint32_t page_size = 0;
        {
            auto env = must(Env::open(live.path(), checkpoint_options()));
            open_tables(env);
            page_size = must(env.stats()).page_size;
            for (auto txns = 20 + rng.below(60); txns > 0; --txns) {
                random_txn(env, rng, model);
                if (rng.chance(0.1)) {
                    must(env.sync(true));
                }
            }
            must(env.sync(true));
            at_checkpoint = model;
            // Right after the flush the disk holds exactly what the page cache holds.
            disk_at_checkpoint = read_file(live.path() / "data.mdb");
            saved_meta = read_file(live.path() / "checkpoint.meta");
            for (auto txns = 20 + rng.below(80); txns > 0; --txns) {
                random_txn(env, rng, model);
            }
            const Bytes cache = read_file(live.path() / "data.mdb");
            // The power goes out: each page holds its old or its new content.
            const std::size_t pages = std::max(cache.size(), disk_at_checkpoint.size()) / page_size;
            Bytes image(pages * page_size, Byte{0});
            std::size_t new_pages = 0;
            for (std::size_t page = 0; page < pages; ++page) {
                const std::size_t at = page * page_size;
                const bool has_old = at + page_size <= disk_at_checkpoint.size();
                const bool has_new = at + page_size <= cache.size();
                const bool take_new = has_new && (!has_old || rng.chance(0.5));
                const Bytes& source = take_new ? cache : disk_at_checkpoint;
                if (take_new || has_old) {
                    std::copy_n(source.begin() + static_cast<std::ptrdiff_t>(at), page_size,
                                image.begin() + static_cast<std::ptrdiff_t>(at));
                }
                new_pages +=
                    take_new && (!has_old ||
                                 !std::equal(
                                     cache.begin() + static_cast<std::ptrdiff_t>(at),
                                     cache.begin() + static_cast<std::ptrdiff_t>(at + page_size),
                                     disk_at_checkpoint.begin() + static_cast<std::ptrdiff_t>(at)))
                        ? 1
                        : 0;
            }
            INFO("pages " << pages << ", changed pages taken " << new_pages);
            write_file(crashed.path() / "data.mdb", image);
            write_file(crashed.path() / "checkpoint.meta", saved_meta);
        }
        auto env = must(Env::open(crashed.path(), checkpoint_options()));
        open_tables(env);
        REQUIRE(dump(env) == at_checkpoint);
        for (int i = 0; i < 10; ++i) {
            random_txn(env, rng, at_checkpoint);
        }
        CHECK(dump(env) == at_checkpoint);
    }
}

TEST_CASE("checkpoint: a damaged checkpoint file is refused, not trusted", "[store][checkpoint]") {
    const testing::TempDir dir;
    {
        auto env = must(Env::open(dir.path(), checkpoint_options()));
        const Table table = must(env.open_table("rows"));
        must(env.write([&](WriteTxn& txn) { return txn.put(table, bytes("k"), bytes("v")); }));
    }
    Bytes meta = read_file(dir.path() / "checkpoint.meta");
    meta[meta.size() / 2] ^= Byte{0x40};
    write_file(dir.path() / "checkpoint.meta", meta);
    const auto error = must_fail(Env::open(dir.path(), checkpoint_options()));
    CHECK(error.is(Errc::corruption));
    CHECK_THAT(error.message(), Catch::Contains("checkpoint.meta is damaged"));
}

TEST_CASE("checkpoint: sync mode name and a fresh environment", "[store][checkpoint]") {
    CHECK(must(parse_sync_mode("checkpoint")) == SyncMode::checkpoint);
    CHECK(to_string(SyncMode::checkpoint) == "checkpoint");
    const testing::TempDir dir;
    // A checkpoint left without its data file (a reset) is dropped, not applied.
    write_file(dir.path() / "checkpoint.meta", Bytes(64, Byte{1}));
    auto env = must(Env::open(dir.path(), checkpoint_options()));
    CHECK(must(env.stats()).sync_mode == SyncMode::checkpoint);
    CHECK(fs::file_size(dir.path() / "checkpoint.meta") > 4096);
}

TEST_CASE("checkpoint: start_writeback between checkpoints changes nothing visible",
          "[store][checkpoint]") {
    const testing::TempDir dir;
    const std::uint64_t seed = testing::seed_from_env();
    INFO("QUEEN_SEED=" << seed);
    Rng rng(seed);
    Model model;
    {
        auto env = must(Env::open(dir.path(), checkpoint_options()));
        open_tables(env);
        for (int i = 0; i < 20; ++i) {
            random_txn(env, rng, model);
            must(env.start_writeback());
        }
        const auto before = must(env.stats()).checkpoint_txn_id;
        must(env.start_writeback());
        CHECK(must(env.stats()).checkpoint_txn_id == before);  // not a checkpoint
        CHECK(dump(env) == model);
    }
    // Another mode: a no-op.
    Options durable = checkpoint_options();
    durable.sync_mode = SyncMode::durable;
    auto env = must(Env::open(dir.path(), durable));
    open_tables(env);
    must(env.start_writeback());
    CHECK(dump(env) == model);
}

}  // namespace
}  // namespace queen::store::test
