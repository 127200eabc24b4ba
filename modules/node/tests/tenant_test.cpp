// modules/node/tests/tenant_test.cpp — the write path: concurrent submits are applied once, in
// order, and survive a restart (replay from applied_index + 1).
#include "tenant.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <thread>

#include "entry.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/support.hpp"
#include "tenant_support.hpp"

using queen::node::testing::messages_of;
using queen::node::testing::open_tenant;
using queen::node::testing::push_command;
using queen::node::testing::read_answered;
using queen::node::testing::small_config;

TEST_CASE("node: concurrent submits are applied exactly once and survive a restart",
          "[node][tenant]") {
    queen::testing::TempDir dir;
    queen::node::detail::Waiters waiters(queen::SystemClock::instance());
    const auto config = small_config();
    constexpr int threads = 4;
    constexpr int per_thread = 200;
    std::uint64_t applied = 0;
    {
        auto tenant = open_tenant(dir.path(), config, waiters);
        REQUIRE(tenant.has_value());
        std::vector<std::thread> workers;
        std::atomic<int> queued{0};
        for (int t = 0; t < threads; ++t) {
            workers.emplace_back([&, t] {
                for (int i = 0; i < per_thread; ++i) {
                    std::promise<bool> done;
                    (*tenant)->submit(
                        push_command("p" + std::to_string(t),
                                     std::to_string(t) + "-" + std::to_string(i)),
                        [&](queen::Result<queen::engine::CommandResult> result) {
                            bool ok = false;
                            if (result) {
                                if (auto* push = std::get_if<queen::queues::PushResult>(&*result)) {
                                    ok = push->items.size() == 1 &&
                                         push->items[0].status == queen::queues::PushStatus::queued;
                                }
                            }
                            done.set_value(ok);
                        });
                    if (done.get_future().get()) {
                        queued.fetch_add(1);
                    }
                }
            });
        }
        for (auto& worker : workers) {
            worker.join();
        }
        CHECK(queued.load() == threads * per_thread);
        // Answers leave before the LMDB commit; a read waits for the commit of everything
        // answered, so after it the state holds every answered push.
        REQUIRE(read_answered(**tenant, [](const queen::engine::Engine&) {}));
        applied = (*tenant)->health().applied_index;
        CHECK(applied >= static_cast<std::uint64_t>(threads * per_thread));
        REQUIRE((*tenant)->stop().has_value());
    }
    // Reopen: the state is there and resubmitting an old transaction id is a duplicate.
    auto tenant = open_tenant(dir.path(), config, waiters);
    REQUIRE(tenant.has_value());
    CHECK((*tenant)->health().applied_index == applied);
    std::promise<queen::queues::PushStatus> status;
    (*tenant)->submit(
        push_command("p1", "1-5"), [&](queen::Result<queen::engine::CommandResult> result) {
            REQUIRE(result.has_value());
            status.set_value(std::get<queen::queues::PushResult>(*result).items.at(0).status);
        });
    CHECK(status.get_future().get() == queen::queues::PushStatus::duplicate);
    REQUIRE((*tenant)->stop().has_value());
    waiters.stop();
}

TEST_CASE("node: a full proposal queue answers busy instead of growing", "[node][tenant]") {
    queen::testing::TempDir dir;
    queen::node::detail::Waiters waiters(queen::SystemClock::instance());
    auto config = small_config();
    config.tenant.proposals_max = 1;
    auto tenant = open_tenant(dir.path(), config, waiters);
    REQUIRE(tenant.has_value());
    // Submit from one thread as fast as possible: with room for one waiting command, some of a
    // burst of 2000 must be refused (the proposer cannot drain the queue between two submits
    // every time); every command gets exactly one answer either way.
    std::atomic<int> answered{0};
    std::atomic<int> busy{0};
    for (int i = 0; i < 2000; ++i) {
        (*tenant)->submit(push_command("p", std::to_string(i)),
                          [&](queen::Result<queen::engine::CommandResult> result) {
                              if (!result && result.error().is(queen::Errc::busy)) {
                                  busy.fetch_add(1);
                              }
                              answered.fetch_add(1);
                          });
    }
    REQUIRE((*tenant)->stop().has_value());
    CHECK(answered.load() == 2000);
    CHECK(busy.load() > 0);
    waiters.stop();
}

TEST_CASE("node: the log is compacted below the durably applied index and replay still works",
          "[node][tenant]") {
    queen::testing::TempDir dir;
    queen::node::detail::Waiters waiters(queen::SystemClock::instance());
    auto config = small_config();
    config.log.segment_size_bytes_max = 4096;  // many small segments to drop
    config.tenant.log_retain_entries = 10;
    config.tenant.state_sync_interval_ms = 5;
    const auto first_segment = dir.path() / "log" / "00000000000000000001.seg";
    {
        auto tenant = open_tenant(dir.path(), config, waiters);
        REQUIRE(tenant.has_value());
        for (int i = 0; i < 300; ++i) {
            std::promise<void> done;
            (*tenant)->submit(
                push_command("p", std::to_string(i)),
                [&](queen::Result<queen::engine::CommandResult>) { done.set_value(); });
            done.get_future().get();
        }
        // Compaction runs on the maintenance thread: observable only on disk, so poll for it.
        for (int attempt = 0; attempt < 2000 && std::filesystem::exists(first_segment); ++attempt) {
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        CHECK_FALSE(std::filesystem::exists(first_segment));
        REQUIRE((*tenant)->stop().has_value());
    }
    auto tenant = open_tenant(dir.path(), config, waiters);
    REQUIRE(tenant.has_value());
    std::promise<queen::queues::PushStatus> status;
    (*tenant)->submit(
        push_command("p", "0"), [&](queen::Result<queen::engine::CommandResult> result) {
            REQUIRE(result.has_value());
            status.set_value(std::get<queen::queues::PushResult>(*result).items.at(0).status);
        });
    CHECK(status.get_future().get() ==
          queen::queues::PushStatus::duplicate);  // from LMDB, not the log
    REQUIRE((*tenant)->stop().has_value());
    waiters.stop();
}

namespace {
/// A wall clock that jumps back and forth by up to a second on every read (thread-safe).
class JitteryClock final : public queen::Clock {
public:
    [[nodiscard]] std::int64_t wall_ms() const override {
        const std::uint64_t n = reads_.fetch_add(1);
        return 1'700'000'000'000 + static_cast<std::int64_t>((n * 7919) % 1000);
    }
    [[nodiscard]] std::int64_t monotonic_ns() const override { return 0; }

private:
    mutable std::atomic<std::uint64_t> reads_{0};
};
}  // namespace

TEST_CASE("node: concurrent submits stamp entries in log order, never going back in time",
          "[node][tenant]") {
    queen::testing::TempDir dir;
    const JitteryClock clock;
    queen::node::detail::Waiters waiters(queen::SystemClock::instance());
    const auto config = small_config();
    constexpr int threads = 4;
    constexpr int per_thread = 100;
    {
        auto tenant = queen::node::detail::Tenant::open(
            "default", dir.path(), config, queen::NullLogger::instance(), clock, waiters);
        REQUIRE(tenant.has_value());
        std::atomic<int> answered{0};
        std::atomic<int> failed{0};
        std::vector<std::thread> workers;
        for (int t = 0; t < threads; ++t) {
            workers.emplace_back([&, t] {
                // No waiting between submits: many commands are in flight at once.
                for (int i = 0; i < per_thread; ++i) {
                    (*tenant)->submit(push_command("p" + std::to_string(t), std::to_string(i)),
                                      [&](queen::Result<queen::engine::CommandResult> result) {
                                          failed.fetch_add(result.has_value() ? 0 : 1);
                                          answered.fetch_add(1);
                                      });
                }
            });
        }
        for (auto& worker : workers) {
            worker.join();
        }
        REQUIRE((*tenant)->stop().has_value());  // answers everything in flight first
        CHECK(answered.load() == threads * per_thread);
        CHECK(failed.load() == 0);
    }
    auto log = queen::log::Log::open(dir.path() / "log", config.log);
    REQUIRE(log.has_value());
    auto records = (*log)->read((*log)->first_index(), (*log)->last_index().next());
    REQUIRE(records.has_value());
    REQUIRE(records->size() >= static_cast<std::size_t>(threads * per_thread));
    std::int64_t previous = 0;
    for (const auto& record : *records) {
        if (record.payload.empty()) {
            continue;  // the no-op of a new raft term: no stamp
        }
        auto entry = queen::node::detail::decode_entry(record.payload);
        REQUIRE(entry.has_value());
        CHECK(entry->timestamp.value() >= previous);
        previous = entry->timestamp.value();
    }
    waiters.stop();
}

TEST_CASE("node: a read brings the LMDB commit of answered entries forward, a reopen has them all",
          "[node][tenant]") {
    queen::testing::TempDir dir;
    queen::node::detail::Waiters waiters(queen::SystemClock::instance());
    auto config = small_config();
    // Applied entries would wait ten minutes for their commit: only a reader (or stop) ends
    // the wait, so a missing wake-up hangs this test instead of passing it.
    config.tenant.state_commit_interval_us = 600'000'000;
    config.tenant.state_sync_interval_ms = 600'000;
    constexpr int pushes = 40;
    auto submit_all = [&](queen::node::detail::Tenant& tenant, int from) {
        for (int i = from; i < from + pushes; ++i) {
            std::promise<bool> done;
            tenant.submit(push_command("p", std::to_string(i)),
                          [&](queen::Result<queen::engine::CommandResult> result) {
                              done.set_value(result.has_value());
                          });
            REQUIRE(done.get_future().get());
        }
    };
    std::uint64_t applied = 0;
    {
        auto tenant = open_tenant(dir.path(), config, waiters);
        REQUIRE(tenant.has_value());
        submit_all(**tenant, 0);
        CHECK(messages_of(**tenant) == pushes);
        submit_all(**tenant, pushes);
        CHECK(messages_of(**tenant) == 2 * pushes);
        submit_all(**tenant, 2 * pushes);  // answered, never read before the stop
        REQUIRE((*tenant)->stop().has_value());
        // Read after the stop: an answer leaves while its apply batch still runs, before the
        // applied index moves past it.
        applied = (*tenant)->health().applied_index;
        CHECK(applied >= static_cast<std::uint64_t>(3 * pushes));
    }
    auto tenant = open_tenant(dir.path(), config, waiters);
    REQUIRE(tenant.has_value());
    CHECK((*tenant)->health().applied_index == applied);
    CHECK(messages_of(**tenant) == 3 * pushes);
    REQUIRE((*tenant)->stop().has_value());
    waiters.stop();
}

TEST_CASE("node: an open LMDB txn commits once it holds state_commit_bytes, without a reader",
          "[node][tenant]") {
    queen::testing::TempDir dir;
    queen::node::detail::Waiters waiters(queen::SystemClock::instance());
    auto config = small_config();
    config.tenant.state_commit_interval_us = 600'000'000;  // time alone never commits here
    config.tenant.state_sync_interval_ms = 600'000;
    const auto commits = [](const queen::node::detail::Tenant& tenant) {
        std::vector<queen::api::MetricSample> samples;
        std::vector<queen::api::HistogramSample> histograms;
        tenant.collect_metrics(samples, histograms);
        for (const auto& sample : samples) {
            if (sample.name == "queen_state_commits_total") {
                return static_cast<std::uint64_t>(sample.value);
            }
        }
        FAIL("queen_state_commits_total is missing");
        return std::uint64_t{0};
    };
    constexpr int pushes = 20;
    // Each push is answered before the next is submitted, so each is an apply batch of its own.
    const auto push_and_read = [&](queen::node::detail::Tenant& tenant) {
        const std::uint64_t before = commits(tenant);
        for (int i = 0; i < pushes; ++i) {
            std::promise<bool> done;
            tenant.submit(push_command("p", std::to_string(i)),
                          [&](queen::Result<queen::engine::CommandResult> result) {
                              done.set_value(result.has_value());
                          });
            REQUIRE(done.get_future().get());
        }
        REQUIRE(read_answered(tenant, [](const queen::engine::Engine&) {}));
        return commits(tenant) - before;
    };
    SECTION("one byte: every apply batch commits") {
        config.tenant.state_commit_bytes = 1;
        auto tenant = open_tenant(dir.path(), config, waiters);
        REQUIRE(tenant.has_value());
        CHECK(push_and_read(**tenant) >= static_cast<std::uint64_t>(pushes));
        REQUIRE((*tenant)->stop().has_value());
    }
    SECTION("a gigabyte: only the read commits, once") {
        config.tenant.state_commit_bytes = std::uint64_t{1} << 30;
        auto tenant = open_tenant(dir.path(), config, waiters);
        REQUIRE(tenant.has_value());
        CHECK(push_and_read(**tenant) == 1);
        REQUIRE((*tenant)->stop().has_value());
    }
    waiters.stop();
}

TEST_CASE("node: a read waiting for the LMDB commit holds no thread and runs after that commit",
          "[node][tenant]") {
    queen::testing::TempDir dir;
    queen::node::detail::Waiters waiters(queen::SystemClock::instance());
    auto config = small_config();
    // Only a waiting read (or stop) commits the applied entries here.
    config.tenant.state_commit_interval_us = 600'000'000;
    config.tenant.state_sync_interval_ms = 600'000;
    auto tenant = open_tenant(dir.path(), config, waiters);
    REQUIRE(tenant.has_value());
    // The push's completion holds the applier thread: the push is answered (applied, handed
    // out) and not yet committed to LMDB, so a read must wait for that commit.
    std::promise<void> answered;
    std::promise<void> release;
    auto released = release.get_future().share();
    (*tenant)->submit(push_command("p", "held"),
                      [&, released](queen::Result<queen::engine::CommandResult> result) {
                          REQUIRE(result.has_value());
                          answered.set_value();
                          released.wait();
                      });
    answered.get_future().wait();
    std::promise<queen::Status> readable;
    auto readable_future = readable.get_future();
    // Returns at once although the state is not readable yet: nothing blocks this thread.
    (*tenant)->when_readable([&](queen::Status status) { readable.set_value(std::move(status)); });
    CHECK(readable_future.wait_for(std::chrono::seconds(0)) == std::future_status::timeout);
    release.set_value();
    REQUIRE(readable_future.get().has_value());
    CHECK(messages_of(**tenant) == 1);
    // Nothing waits now: the next read is ready on the calling thread, before when_readable
    // returns.
    bool is_ready_inline = false;
    (*tenant)->when_readable([&](queen::Status status) { is_ready_inline = status.has_value(); });
    CHECK(is_ready_inline);
    REQUIRE((*tenant)->stop().has_value());
    waiters.stop();
}

namespace {
/// Every file under `dir` with its bytes.
std::map<std::filesystem::path, std::string> files_under(const std::filesystem::path& dir) {
    std::map<std::filesystem::path, std::string> files;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
        if (entry.is_regular_file()) {
            std::ifstream in(entry.path(), std::ios::binary);
            files.emplace(entry.path(), std::string(std::istreambuf_iterator<char>(in), {}));
        }
    }
    return files;
}
}  // namespace

TEST_CASE("node: a flipped bit in an applied log record stops the open and changes no file",
          "[node][tenant]") {
    queen::testing::TempDir dir;
    queen::node::detail::Waiters waiters(queen::SystemClock::instance());
    const auto config = small_config();
    {
        auto tenant = open_tenant(dir.path(), config, waiters);
        REQUIRE(tenant.has_value());
        for (int i = 0; i < 20; ++i) {
            std::promise<void> done;
            (*tenant)->submit(
                push_command("p", std::to_string(i)),
                [&](queen::Result<queen::engine::CommandResult>) { done.set_value(); });
            done.get_future().get();
        }
        REQUIRE((*tenant)->stop().has_value());  // syncs LMDB: every entry is applied durably
    }
    // The newest record of the newest segment: acknowledged, applied, then one bit flips.
    std::filesystem::path newest;
    for (const auto& entry : std::filesystem::directory_iterator(dir.path() / "log")) {
        if (entry.path().extension() == ".seg") {  // not the hard state file
            newest = std::max(newest, entry.path());
        }
    }
    std::string bytes = files_under(dir.path() / "log").at(newest);
    std::vector<std::uint64_t> offsets;
    (void)queen::log::scan_segment(
        queen::as_bytes(bytes), config.log.record_size_bytes_max,
        [&](const queen::log::RecordView&, std::uint64_t offset) { offsets.push_back(offset); });
    REQUIRE_FALSE(offsets.empty());
    bytes[offsets.back() + queen::log::record_header_size] ^= 0x10;
    {
        std::ofstream out(newest, std::ios::binary | std::ios::trunc);
        out << bytes;
    }
    const auto before = files_under(dir.path());
    auto reopened = open_tenant(dir.path(), config, waiters);
    REQUIRE_FALSE(reopened.has_value());
    CHECK(reopened.error().is(queen::Errc::corruption));
    CHECK_THAT(reopened.error().context, Catch::Contains("no file was changed"));
    CHECK(files_under(dir.path()) == before);
    waiters.stop();
}
