// modules/store/tests/env_test.cpp — Env on real LMDB files: open, tables, read-only, stats,
// copy, sync modes, map growth and poisoning.
#include "queen/store/env.hpp"

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "helpers.hpp"
#include "queen/store/keys.hpp"
#include "queen/testing/support.hpp"

namespace queen::store::test {
namespace {

Options small_map_options() {
    Options options;
    options.map_size_bytes = 64 << 10;
    options.map_size_bytes_max = 64 << 20;
    return options;
}

std::optional<std::string> read_key(Env& env, Table table, std::string_view key) {
    auto txn = must(env.begin_read());
    auto value = must(txn.get(table, bytes(key)));
    if (!value.has_value()) {
        return std::nullopt;
    }
    return text(*value);
}

queen::Result<void> put_values(WriteTxn& txn, Table table, std::uint64_t first, std::uint64_t count,
                               std::size_t value_size) {
    const std::string value(value_size, 'v');
    for (std::uint64_t i = first; i < first + count; ++i) {
        QUEEN_TRY(txn.put(table, u64be_key(i), bytes(value)));
    }
    return {};
}

TEST_CASE("store: open creates the directory and files, and reopen keeps the data",
          "[store][env]") {
    queen::testing::TempDir dir;
    const auto path = dir.path() / "a" / "b" / "state";
    {
        Env env = must(Env::open(path, Options{}));
        CHECK(env.path() == path);
        CHECK_FALSE(env.is_read_only());
        CHECK_FALSE(env.is_poisoned());
        CHECK(env.map_size_bytes() == Options{}.map_size_bytes);
        const Table table = must(env.open_table("t"));
        must(env.write([&](WriteTxn& txn) { return txn.put(table, bytes("k"), bytes("v")); }));
    }
    CHECK(std::filesystem::is_regular_file(path / "data.mdb"));
    CHECK(std::filesystem::is_regular_file(path / "lock.mdb"));
    // The default map is large (growth is a pause) and costs address space only: the file
    // holds just the pages written.
    CHECK(Options{}.map_size_bytes >= (std::uint64_t{16} << 30));
    CHECK(std::filesystem::file_size(path / "data.mdb") < (std::uint64_t{1} << 20));
    Env env = must(Env::open(path, Options{}));
    const Table table = must(env.open_table("t"));
    CHECK(read_key(env, table, "k") == "v");
}

TEST_CASE("store: open rejects invalid options", "[store][env]") {
    queen::testing::TempDir dir;
    Options options;
    options.tables_max = 0;
    CHECK(must_fail(Env::open(dir.path(), options)).is(Errc::invalid_argument));
}

TEST_CASE("store: open_table returns the same handle and checks flags", "[store][env]") {
    queen::testing::TempDir dir;
    Env env = must(Env::open(dir.path(), Options{}));
    const Table first = must(env.open_table("queue", TableFlags::integer_keys));
    const Table again = must(env.open_table("queue", TableFlags::integer_keys));
    CHECK(first == again);
    CHECK(first.id() >= 2);
    CHECK(first.flags() == TableFlags::integer_keys);
    auto error = must_fail(env.open_table("queue", TableFlags::dupsort));
    CHECK(error.is(Errc::invalid_argument));
    CHECK_THAT(error.message(), Catch::Contains("integer_keys"));
    CHECK(must_fail(env.open_table("")).is(Errc::invalid_argument));
    CHECK(must_fail(env.open_table(std::string(600, 'n'))).is(Errc::invalid_argument));
    const Table other = must(env.open_table("other", TableFlags::dupsort | TableFlags::dup_fixed));
    CHECK(other != first);
    CHECK(must(env.table_names()) == std::vector<std::string>{"other", "queue"});
}

TEST_CASE("store: reopening a table with other flags in a new Env is an error", "[store][env]") {
    queen::testing::TempDir dir;
    {
        Env env = must(Env::open(dir.path(), Options{}));
        must(env.open_table("dups", TableFlags::dupsort));
    }
    Env env = must(Env::open(dir.path(), Options{}));
    const auto error = must_fail(env.open_table("dups"));
    CHECK(error.is(Errc::invalid_argument));
    CHECK_THAT(error.message(), Catch::Contains("dupsort"));
    must(env.open_table("dups", TableFlags::dupsort));
}

TEST_CASE("store: more tables than tables_max is tables_full", "[store][env]") {
    queen::testing::TempDir dir;
    Options options;
    options.tables_max = 2;
    Env env = must(Env::open(dir.path(), options));
    must(env.open_table("one"));
    must(env.open_table("two"));
    CHECK(must_fail(env.open_table("three")).is(Errc::tables_full));
}

TEST_CASE("store: read-only open sees committed data and refuses writes", "[store][env]") {
    queen::testing::TempDir dir;
    {
        Env env = must(Env::open(dir.path(), Options{}));
        const Table table = must(env.open_table("t"));
        must(env.open_table("empty"));
        must(env.write([&](WriteTxn& txn) { return txn.put(table, bytes("k"), bytes("v")); }));
    }
    Env env = must(Env::open_read_only(dir.path()));
    CHECK(env.is_read_only());
    const Table table = must(env.open_table("t"));
    CHECK(read_key(env, table, "k") == "v");
    CHECK(must_fail(env.open_table("missing")).is(Errc::not_found));
    CHECK(must_fail(env.begin_write()).is(Errc::read_only));
    const auto write_error =
        must_fail(env.write([&](WriteTxn& txn) { return txn.put(table, bytes("x"), bytes("y")); }));
    CHECK(write_error.is(Errc::read_only));
    must(env.sync());
    const EnvStats stats = must(env.stats());
    CHECK(stats.is_read_only);
    REQUIRE(stats.tables.size() == 2);
    CHECK(stats.tables[0].name == "empty");
    CHECK(stats.tables[1].entries == 1);
}

TEST_CASE("store: read-only open of a missing or foreign directory fails clearly", "[store][env]") {
    queen::testing::TempDir dir;
    auto error = must_fail(Env::open_read_only(dir.path() / "nope"));
    CHECK(error.is(Errc::not_found));
    error = must_fail(Env::open_read_only(dir.path()));
    CHECK(error.is(Errc::not_an_environment));
    CHECK_THAT(error.message(), Catch::Contains("not an LMDB environment"));
    {
        std::ofstream garbage(dir.path() / "data.mdb");
        garbage << std::string(16384, 'x');
    }
    error = must_fail(Env::open_read_only(dir.path()));
    CHECK(error.is(Errc::not_an_environment));
    CHECK_THAT(error.message(), Catch::Contains("MDB_INVALID"));
}

TEST_CASE("store: a read-only reader adopts a map grown by a writer process", "[store][env]") {
    queen::testing::TempDir dir;
    const Options options = small_map_options();
    {
        Env env = must(Env::open(dir.path(), options));
        must(env.open_table("t"));
    }
    Env reader = must(Env::open_read_only(dir.path()));
    const Table table = must(reader.open_table("t"));
    const std::uint64_t map_before = reader.map_size_bytes();

    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        // A separate process (LMDB forbids opening one env twice in a process) that grows the
        // map well past the reader's mapping.
        auto env = Env::open(dir.path(), options);
        if (!env) {
            ::_exit(2);
        }
        auto child_table = env->open_table("t");
        if (!child_table) {
            ::_exit(3);
        }
        for (std::uint64_t batch = 0; batch < 16; ++batch) {
            auto done = env->write(
                [&](WriteTxn& txn) { return put_values(txn, *child_table, batch * 64, 64, 1000); });
            if (!done) {
                ::_exit(4);
            }
        }
        ::_exit(0);
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);

    auto txn = must(reader.begin_read());
    CHECK(reader.map_size_bytes() > map_before);
    CHECK(must(txn.stats(table)).entries == 16 * 64);
    CHECK(must(txn.get(table, u64be_key(1023))).has_value());
}

TEST_CASE("store: stats report page size, map size and per-table sizes", "[store][env]") {
    queen::testing::TempDir dir;
    {
        Env env = must(Env::open(dir.path(), Options{}));
        const Table messages = must(env.open_table("messages"));
        const Table cursors = must(env.open_table("cursors"));
        must(env.write([&](WriteTxn& txn) -> queen::Result<void> {
            QUEEN_TRY(put_values(txn, messages, 0, 2000, 200));
            QUEEN_TRY(put_values(txn, cursors, 0, 3, 8));
            return {};
        }));
        const EnvStats stats = must(env.stats());
        CHECK(stats.page_size == 4096);
        CHECK(stats.map_size_bytes == Options{}.map_size_bytes);
        CHECK(stats.sync_mode == SyncMode::durable);
        CHECK(stats.main.entries == 3);  // the two, and the store's store.value_checksums
        REQUIRE(stats.tables.size() == 2);
        CHECK(stats.tables[0].name == "cursors");
        CHECK(stats.tables[0].entries == 3);
        CHECK(stats.tables[0].depth == 1);
        CHECK(stats.tables[1].name == "messages");
        CHECK(stats.tables[1].entries == 2000);
        CHECK(stats.tables[1].depth >= 2);
        CHECK(stats.tables[1].size_bytes() >= 2000 * 200);
        CHECK(stats.tables[1].size_bytes() ==
              stats.tables[1].pages() * std::uint64_t{stats.page_size});
        CHECK(stats.used_bytes() <= stats.file_size_bytes);
        CHECK(stats.last_txn_id >= 3);
        CHECK(stats.readers_max == Options{}.readers_max);
    }
    // A new Env reports tables it has not opened itself, then hands out the same handles.
    Env env = must(Env::open(dir.path(), Options{}));
    const EnvStats stats = must(env.stats());
    REQUIRE(stats.tables.size() == 2);
    CHECK(stats.tables[1].entries == 2000);
    const Table messages = must(env.open_table("messages"));
    CHECK(must(must(env.begin_read()).stats(messages)).entries == 2000);
}

TEST_CASE("store: free pages are counted after deletes", "[store][env]") {
    queen::testing::TempDir dir;
    Env env = must(Env::open(dir.path(), Options{}));
    const Table table = must(env.open_table("t"));
    must(env.write([&](WriteTxn& txn) { return put_values(txn, table, 0, 3000, 500); }));
    must(env.write([&](WriteTxn& txn) { return txn.clear(table); }));
    must(env.write([&](WriteTxn& txn) { return txn.put(table, bytes("k"), bytes("v")); }));
    const EnvStats stats = must(env.stats());
    CHECK(stats.free_pages > 100);
}

TEST_CASE("store: copy_to writes a compacted copy that opens as an environment", "[store][env]") {
    queen::testing::TempDir dir;
    Env env = must(Env::open(dir.path() / "live", Options{}));
    const Table table = must(env.open_table("t"));
    must(env.write([&](WriteTxn& txn) { return put_values(txn, table, 0, 4000, 300); }));
    must(env.write([&](WriteTxn& txn) -> queen::Result<void> {
        for (std::uint64_t i = 0; i < 3900; ++i) {
            QUEEN_TRY(txn.del(table, u64be_key(i)));
        }
        return {};
    }));
    must(env.copy_to(dir.path() / "copy"));
    must(env.copy_to(dir.path() / "plain", false));
    CHECK(must_fail(env.copy_to(dir.path() / "copy")).is(Errc::invalid_argument));
    const auto live_size = std::filesystem::file_size(dir.path() / "live" / "data.mdb");
    const auto copy_size = std::filesystem::file_size(dir.path() / "copy" / "data.mdb");
    CHECK(copy_size * 4 < live_size);
    // The copies are read in child processes: one process must not open an env twice.
    for (const char* name : {"copy", "plain"}) {
        const pid_t child = ::fork();
        REQUIRE(child >= 0);
        if (child == 0) {
            auto copy = Env::open_read_only(dir.path() / name);
            if (!copy) {
                ::_exit(2);
            }
            auto copy_table = copy->open_table("t");
            auto txn = copy->begin_read();
            if (!copy_table || !txn) {
                ::_exit(3);
            }
            auto stats = txn->stats(*copy_table);
            auto value = txn->get(*copy_table, u64be_key(3999));
            const bool ok = stats && stats->entries == 100 && value && value->has_value() &&
                            (*value)->size() == 300;
            ::_exit(ok ? 0 : 4);
        }
        int status = 0;
        REQUIRE(::waitpid(child, &status, 0) == child);
        INFO("copy " << name);
        CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    }
}

TEST_CASE("store: every sync mode commits, syncs and reopens", "[store][env]") {
    for (const SyncMode mode : {SyncMode::durable, SyncMode::no_meta_sync, SyncMode::no_sync}) {
        INFO("sync mode " << to_string(mode));
        queen::testing::TempDir dir;
        Options options;
        options.sync_mode = mode;
        {
            Env env = must(Env::open(dir.path(), options));
            CHECK(env.options().sync_mode == mode);
            const Table table = must(env.open_table("t"));
            must(env.write([&](WriteTxn& txn) { return put_values(txn, table, 0, 100, 50); }));
            must(env.sync(false));
            must(env.sync(true));
            CHECK(must(env.stats()).sync_mode == mode);
        }
        Env env = must(Env::open(dir.path(), options));
        const Table table = must(env.open_table("t"));
        CHECK(must(must(env.begin_read()).stats(table)).entries == 100);
    }
}

TEST_CASE("store: Env::write grows a tiny map and reruns the txn", "[store][env][growth]") {
    queen::testing::TempDir dir;
    Env env = must(Env::open(dir.path(), small_map_options()));
    const Table table = must(env.open_table("t"));
    int runs = 0;
    const auto written = must(env.write([&](WriteTxn& txn) -> queen::Result<std::uint64_t> {
        ++runs;
        QUEEN_TRY(put_values(txn, table, 0, 2000, 400));  // ~1 MB into a 64 KiB map
        return std::uint64_t{2000};
    }));
    CHECK(written == 2000);
    CHECK(runs > 1);
    CHECK(env.map_size_bytes() >= (1 << 20));
    CHECK(env.map_size_bytes() <= small_map_options().map_size_bytes_max);
    auto txn = must(env.begin_read());
    CHECK(must(txn.stats(table)).entries == 2000);
}

TEST_CASE("store: map_full protocol by hand: the txn fails, the map doubles, a rerun succeeds",
          "[store][env][growth]") {
    queen::testing::TempDir dir;
    Env env = must(Env::open(dir.path(), small_map_options()));
    const Table table = must(env.open_table("t"));
    const std::uint64_t before = env.map_size_bytes();
    auto txn = must(env.begin_write());
    auto cursor = must(txn.cursor(table));
    queen::Result<void> put_result;
    std::uint64_t i = 0;
    for (; i < 10000; ++i) {
        put_result = txn.put(table, u64be_key(i), bytes(std::string(400, 'x')));
        if (!put_result) {
            break;
        }
    }
    const auto error = must_fail(std::move(put_result));
    CHECK(error.is(Errc::map_full));
    CHECK_THAT(error.message(), Catch::Contains("rerun"));
    CHECK(env.map_size_bytes() == 2 * before);
    // Every later call on the failed txn repeats map_full, so QUEEN_TRY chains unwind.
    CHECK(must_fail(txn.put(table, bytes("k"), bytes("v"))).is(Errc::map_full));
    CHECK(must_fail(txn.get(table, bytes("k"))).is(Errc::map_full));
    CHECK(must_fail(cursor.first()).is(Errc::map_full));
    CHECK(must_fail(txn.commit()).is(Errc::map_full));
    CHECK_FALSE(env.is_poisoned());
    // The aborted txn wrote nothing; a rerun of a smaller batch fits the doubled map.
    auto rerun = must(env.begin_write());
    CHECK(must(rerun.stats(table)).entries == 0);
    must(put_values(rerun, table, 0, i / 2, 400));
    must(rerun.commit());
}

TEST_CASE("store: map full at map_size_bytes_max is a clear error, not poison",
          "[store][env][growth]") {
    queen::testing::TempDir dir;
    Options options = small_map_options();
    options.map_size_bytes_max = 256 << 10;
    Env env = must(Env::open(dir.path(), options));
    const Table table = must(env.open_table("t"));
    const auto error =
        must_fail(env.write([&](WriteTxn& txn) { return put_values(txn, table, 0, 4000, 400); }));
    CHECK(error.is(Errc::map_size_max_reached));
    CHECK_THAT(error.message(), Catch::Contains("map_size_bytes_max"));
    CHECK(env.map_size_bytes() == options.map_size_bytes_max);
    CHECK_FALSE(env.is_poisoned());
    must(env.write([&](WriteTxn& txn) { return put_values(txn, table, 0, 10, 400); }));
    CHECK(must(must(env.begin_read()).stats(table)).entries == 10);
}

TEST_CASE("store: readers in other threads stay correct while the writer grows the map",
          "[store][env][growth]") {
    queen::testing::TempDir dir;
    Env env = must(Env::open(dir.path(), small_map_options()));
    const Table table = must(env.open_table("t"));
    const Table meta = must(env.open_table("meta"));
    std::atomic<bool> is_done{false};
    std::atomic<std::uint64_t> reads{0};
    std::atomic<std::uint64_t> errors{0};
    auto reader = [&] {
        while (!is_done.load()) {
            auto txn = env.begin_read();
            if (!txn) {
                ++errors;
                continue;
            }
            // The batch count and the batch's last value are written in one txn: a snapshot
            // holding one must hold the other, with the whole value intact.
            auto count = txn->get(meta, bytes("batches"));
            if (!count || !count->has_value()) {
                continue;
            }
            const std::uint64_t batches = KeyReader(**count).u64be();
            auto last = txn->get(table, u64be_key(batches * 50 - 1));
            if (!last || !last->has_value() || (*last)->size() != 2000 ||
                (**last)[1999] != static_cast<Byte>('a' + batches % 26)) {
                ++errors;
            }
            ++reads;
        }
    };
    std::thread first(reader);
    std::thread second(reader);
    for (std::uint64_t batch = 1; batch <= 60; ++batch) {
        must(env.write([&](WriteTxn& txn) -> queen::Result<void> {
            const std::string value(2000, static_cast<char>('a' + batch % 26));
            for (std::uint64_t i = (batch - 1) * 50; i < batch * 50; ++i) {
                QUEEN_TRY(txn.put(table, u64be_key(i), bytes(value)));
            }
            return txn.put(meta, bytes("batches"), u64be_key(batch));
        }));
    }
    is_done = true;
    first.join();
    second.join();
    CHECK(errors.load() == 0);
    CHECK(env.map_size_bytes() >= (4 << 20));
    INFO("reads=" << reads.load());
}

/// Restores RLIMIT_FSIZE and SIGXFSZ when the test ends, even if it fails.
class FileSizeLimit {
public:
    explicit FileSizeLimit(rlim_t bytes) {
        REQUIRE(::getrlimit(RLIMIT_FSIZE, &saved_) == 0);
        previous_handler_ = ::signal(SIGXFSZ, SIG_IGN);
        rlimit limit = saved_;
        limit.rlim_cur = bytes;
        REQUIRE(::setrlimit(RLIMIT_FSIZE, &limit) == 0);
    }
    ~FileSizeLimit() {
        ::setrlimit(RLIMIT_FSIZE, &saved_);
        ::signal(SIGXFSZ, previous_handler_);
    }
    FileSizeLimit(const FileSizeLimit&) = delete;
    FileSizeLimit& operator=(const FileSizeLimit&) = delete;

private:
    rlimit saved_{};
    sighandler_t previous_handler_ = SIG_DFL;
};

TEST_CASE("store: a commit whose writes fail poisons the env", "[store][env][poison]") {
    queen::testing::TempDir dir;
    {
        Env env = must(Env::open(dir.path(), Options{}));
        const Table table = must(env.open_table("t"));
        must(env.write([&](WriteTxn& txn) { return txn.put(table, bytes("kept"), bytes("1")); }));
        auto big = must(env.begin_write());
        must(big.put(table, bytes("lost"), bytes(std::string(1 << 20, 'b'))));
        queen::Error commit_error;
        {
            // Writes past the current end of data.mdb now fail with EFBIG, as a full or
            // failing disk would.
            FileSizeLimit limit(std::filesystem::file_size(dir.path() / "data.mdb"));
            commit_error = must_fail(big.commit());
        }
        CHECK(commit_error.is(Errc::io));
        CHECK_THAT(commit_error.message(), Catch::Contains("commit"));
        CHECK(env.is_poisoned());
        const auto read_error = must_fail(env.begin_read());
        CHECK(read_error.is(Errc::poisoned));
        CHECK_THAT(read_error.message(), Catch::Contains("File too large"));
        CHECK(must_fail(env.begin_write()).is(Errc::poisoned));
        CHECK(must_fail(env.sync()).is(Errc::poisoned));
        CHECK(must_fail(env.stats()).is(Errc::poisoned));
        CHECK(must_fail(env.open_table("t")).is(Errc::poisoned));
        CHECK(must_fail(env.copy_to(dir.path() / "copy")).is(Errc::poisoned));
    }
    // Reopening is the way out: the failed txn is absent, the earlier one intact.
    Env env = must(Env::open(dir.path(), Options{}));
    CHECK_FALSE(env.is_poisoned());
    const Table table = must(env.open_table("t"));
    CHECK(read_key(env, table, "kept") == "1");
    CHECK_FALSE(read_key(env, table, "lost").has_value());
}

TEST_CASE("store: a live txn sees poisoning on its next call", "[store][env][poison]") {
    queen::testing::TempDir dir;
    Env env = must(Env::open(dir.path(), Options{}));
    const Table table = must(env.open_table("t"));
    must(env.write([&](WriteTxn& txn) { return txn.put(table, bytes("k"), bytes("1")); }));
    auto reader = must(env.begin_read());
    CHECK(must(reader.get(table, bytes("k"))).has_value());
    {
        auto big = must(env.begin_write());
        must(big.put(table, bytes("big"), bytes(std::string(1 << 20, 'b'))));
        FileSizeLimit limit(std::filesystem::file_size(dir.path() / "data.mdb"));
        CHECK_FALSE(big.commit().has_value());
    }
    CHECK(must_fail(reader.get(table, bytes("k"))).is(Errc::poisoned));
}

// ---- libfiu: fdatasync failures, in a child process run under `fiu-run -x` ----

/// The child half: runs only when the parent test below starts this binary under fiu-run.
TEST_CASE("store: fiu child (run by the fdatasync test)", "[.store-fiu-child]") {
    const char* dir_text = std::getenv("QUEEN_STORE_FIU_DIR");
    const char* mode_text = std::getenv("QUEEN_STORE_FIU_MODE");
    REQUIRE(dir_text != nullptr);
    REQUIRE(mode_text != nullptr);
    const SyncMode mode = must(parse_sync_mode(mode_text));
    Options options;
    options.sync_mode = mode;
    Env env = must(Env::open(dir_text, options));
    const Table table = must(env.open_table("t"));
    auto txn = must(env.begin_write());
    must(txn.put(table, bytes("lost"), bytes("x")));
    queen::Error error;
    if (mode == SyncMode::durable) {
        error = must_fail(txn.commit());  // commit calls fdatasync, which fails
    } else {
        must(txn.commit());                 // no_sync: the commit does not sync...
        error = must_fail(env.sync(true));  // ...the explicit sync does, and fails
    }
    CHECK(error.is(Errc::io));
    CHECK(env.is_poisoned());
    CHECK(must_fail(env.begin_read()).is(Errc::poisoned));
    CHECK(must_fail(env.sync(true)).is(Errc::poisoned));
}

TEST_CASE("store: fdatasync failure during commit or sync poisons the env (libfiu)",
          "[store][env][poison]") {
    if (::access("/usr/bin/fiu-run", X_OK) != 0) {
        WARN("fiu-run is not installed (apt-get install fiu-utils): skipped");
        return;
    }
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
    // The child would run with libfiu's LD_PRELOAD ahead of the sanitizer runtime, which
    // crashes at start; the plain builds (make test) run this test.
    WARN("libfiu's LD_PRELOAD does not mix with sanitizer runtimes: skipped in this build");
    return;
#endif
    for (const char* mode : {"durable", "no_sync"}) {
        INFO("sync mode " << mode);
        queen::testing::TempDir dir;
        {
            Env env = must(Env::open(dir.path(), Options{}));
            const Table table = must(env.open_table("t"));
            must(env.write(
                [&](WriteTxn& txn) { return txn.put(table, bytes("kept"), bytes("1")); }));
        }
        const auto output = dir.path() / "child.out";
        const std::string command =
            "QUEEN_STORE_FIU_DIR='" + dir.path().string() + "' QUEEN_STORE_FIU_MODE=" + mode +
            " /usr/bin/fiu-run -x -c 'enable name=posix/io/sync/fdatasync,failinfo=5' "
            "/proc/" +
            std::to_string(::getpid()) + "/exe '[.store-fiu-child]' > '" + output.string() +
            "' 2>&1";
        const int status = std::system(command.c_str());
        std::ifstream child_output(output);
        std::stringstream text_out;
        text_out << child_output.rdbuf();
        INFO("child output:\n" << text_out.str());
        REQUIRE(WIFEXITED(status));
        CHECK(WEXITSTATUS(status) == 0);
        if (std::string(mode) == "durable") {
            // The failed commit never became visible.
            Env env = must(Env::open(dir.path(), Options{}));
            const Table table = must(env.open_table("t"));
            CHECK(read_key(env, table, "kept") == "1");
            CHECK_FALSE(read_key(env, table, "lost").has_value());
        }
    }
}

}  // namespace
}  // namespace queen::store::test
