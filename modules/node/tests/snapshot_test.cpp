// modules/node/tests/snapshot_test.cpp — snapshots: the chunk/request frames, a leader's source
// and a follower's receiver wired together in one process around a real LMDB copy, and the
// install steps with a crash after each of them.
#include "snapshot.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <future>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "data_dir.hpp"
#include "queen/core/bytes.hpp"
#include "queen/core/clock.hpp"
#include "queen/core/logger.hpp"
#include "queen/store/env.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/result.hpp"
#include "queen/testing/support.hpp"

using queen::Byte;
using queen::Bytes;
using queen::ByteSpan;
using queen::Errc;
using queen::LogIndex;
using queen::NodeId;
using queen::Term;
using queen::node::detail::ChunkStatus;
using queen::node::detail::InstallMeta;
using queen::node::detail::SnapshotChunk;
using queen::node::detail::SnapshotReceiver;
using queen::node::detail::SnapshotRequest;
using queen::node::detail::SnapshotSource;
namespace fs = std::filesystem;
namespace detail = queen::node::detail;
using queen::testing::must;
using queen::testing::must_fail;

namespace {

constexpr NodeId leader_id{1};
constexpr NodeId follower_id{2};

/// A clock the source's copy thread may read while the test moves it (ManualClock is not
/// synchronised).
class TestClock final : public queen::Clock {
public:
    [[nodiscard]] std::int64_t wall_ms() const override {
        return 1'700'000'000'000 + ms_.load(std::memory_order_relaxed);
    }
    [[nodiscard]] std::int64_t monotonic_ns() const override {
        return ms_.load(std::memory_order_relaxed) * 1'000'000;
    }
    void advance_ms(std::int64_t ms) { ms_.fetch_add(ms, std::memory_order_relaxed); }

private:
    std::atomic<std::int64_t> ms_{1'000};
};

/// Waits for a condition nothing signals (the source's copy thread removing files), bounded.
template <class Pred>
bool eventually(Pred pred) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!pred()) {
        if (std::chrono::steady_clock::now() > deadline) {
            return false;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
}

Bytes encode(const SnapshotRequest& request) {
    Bytes out;
    detail::encode_snapshot_request(request, out);
    return out;
}

Bytes encode(const SnapshotChunk& chunk) {
    Bytes out;
    detail::encode_snapshot_chunk(chunk, out);
    return out;
}

std::string text_of(ByteSpan bytes) {
    return std::string(queen::as_chars(bytes));
}

std::string read_text(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

/// For the source's copy thread (no Catch assertions off the test's thread).
queen::Status copy_text(const fs::path& dir, const std::string& text) {
    std::ofstream out(dir / "data.mdb", std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) {
        return queen::Error{Errc::io, "cannot write " + (dir / "data.mdb").string()};
    }
    return {};
}

void write_text(const fs::path& path, const std::string& text) {
    fs::create_directories(path.parent_path());
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    REQUIRE(out.good());
}

/// Every file below `root` (relative path -> contents), and every empty directory (-> "<dir>").
std::map<std::string, std::string> layout(const fs::path& root) {
    std::map<std::string, std::string> files;
    for (const auto& entry : fs::recursive_directory_iterator(root)) {
        const std::string name = fs::relative(entry.path(), root).generic_string();
        if (entry.is_regular_file()) {
            files[name] = read_text(entry.path());
        } else if (entry.is_directory() && fs::is_empty(entry.path())) {
            files[name] = "<dir>";
        }
    }
    return files;
}

// -- a state to copy ----------------------------------------------------------------------------

constexpr std::uint64_t big_records = 160;
constexpr std::size_t big_value_size = 64 * 1024;  // 160 * 64 KiB = 10 MiB
constexpr std::uint64_t small_records = 500;

std::string key_of(std::uint64_t i) {
    std::string key = std::to_string(i);
    return std::string(8 - std::min<std::size_t>(8, key.size()), '0') + key;
}

/// A value of `size` bytes that differs from every other record's.
std::string value_of(std::uint64_t i, std::size_t size) {
    std::string value(size, '\0');
    std::uint64_t x = i * 0x9E3779B97F4A7C15ull + 1;
    for (char& c : value) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        c = static_cast<char>(x);
    }
    return value;
}

/// Table "big": `big` records of 64 KiB; table "small": 500 short records.
void fill(queen::store::Env& env, std::uint64_t big) {
    const auto big_table = must(env.open_table("big"));
    const auto small_table = must(env.open_table("small"));
    must(env.write([&](queen::store::WriteTxn& txn) -> queen::Result<void> {
        for (std::uint64_t i = 0; i < big; ++i) {
            const std::string value = value_of(i, big_value_size);
            QUEEN_TRY(txn.put(big_table, queen::as_bytes(key_of(i)), queen::as_bytes(value)));
        }
        for (std::uint64_t i = 0; i < small_records; ++i) {
            const std::string value = "small-" + std::to_string(i);
            QUEEN_TRY(txn.put(small_table, queen::as_bytes(key_of(i)), queen::as_bytes(value)));
        }
        return {};
    }));
}

/// The environment in `dir` holds exactly what fill(env, big) wrote.
void check_filled(const fs::path& dir, std::uint64_t big) {
    auto env = must(queen::store::Env::open_read_only(dir));
    CHECK(must(env.table_names()) == std::vector<std::string>{"big", "small"});
    const auto big_table = must(env.open_table("big"));
    const auto small_table = must(env.open_table("small"));
    auto txn = must(env.begin_read());
    CHECK(must(txn.stats(big_table)).entries == big);
    CHECK(must(txn.stats(small_table)).entries == small_records);
    std::uint64_t equal = 0;
    for (std::uint64_t i = 0; i < big; ++i) {
        const auto value = must(txn.get(big_table, queen::as_bytes(key_of(i))));
        equal += (value && text_of(*value) == value_of(i, big_value_size)) ? 1 : 0;
    }
    CHECK(equal == big);
    const auto last = must(txn.get(small_table, queen::as_bytes(key_of(small_records - 1))));
    REQUIRE(last.has_value());
    CHECK(text_of(*last) == "small-" + std::to_string(small_records - 1));
}

/// What a source sent and a receiver asked, decoded (the test's thread only).
struct Traffic {
    std::vector<SnapshotRequest> requests;
    std::vector<ChunkStatus> statuses;
    std::vector<std::uint64_t> ok_offsets;

    [[nodiscard]] std::size_t count(ChunkStatus status) const {
        return static_cast<std::size_t>(std::count(statuses.begin(), statuses.end(), status));
    }
};

}  // namespace

// -- frames -------------------------------------------------------------------------------------

TEST_CASE("snapshot: a request frame round-trips and is little-endian", "[snapshot]") {
    const SnapshotRequest request{0x0102030405060708ull, LogIndex{99}, std::uint64_t{4} << 20};
    const Bytes frame = encode(request);
    REQUIRE(frame.size() == 24);
    CHECK(frame[0] == 0x08);
    CHECK(frame[7] == 0x01);
    CHECK(frame[8] == 99);
    CHECK(frame[18] == 0x40);  // 4 << 20 = 0x400000
    const SnapshotRequest decoded = must(detail::decode_snapshot_request(frame));
    CHECK(decoded.session == request.session);
    CHECK(decoded.index == LogIndex{99});
    CHECK(decoded.offset == request.offset);
}

TEST_CASE("snapshot: a request frame of the wrong size is corruption", "[snapshot]") {
    const Bytes frame = encode(SnapshotRequest{7, LogIndex{1}, 0});
    for (std::size_t size : {std::size_t{0}, std::size_t{8}, std::size_t{23}}) {
        INFO("size " << size);
        CHECK(must_fail(detail::decode_snapshot_request(ByteSpan(frame).first(size)))
                  .is(Errc::corruption));
    }
    Bytes longer = frame;
    longer.push_back(0);
    CHECK(must_fail(detail::decode_snapshot_request(longer)).is(Errc::corruption));
}

TEST_CASE("snapshot: a chunk frame round-trips with every status", "[snapshot]") {
    const std::string data = "chunk bytes";
    for (std::uint8_t status = 0; status <= static_cast<std::uint8_t>(ChunkStatus::failed);
         ++status) {
        INFO("status " << int(status));
        SnapshotChunk chunk;
        chunk.session = 0xAABBCCDDEEFF0011ull;
        chunk.status = static_cast<ChunkStatus>(status);
        chunk.offset = 100;
        chunk.total = 100 + data.size() + 5;
        chunk.data = queen::as_bytes(data);
        const Bytes frame = encode(chunk);
        REQUIRE(frame.size() == 25 + data.size());
        CHECK(frame[8] == status);
        const SnapshotChunk decoded = must(detail::decode_snapshot_chunk(frame));
        CHECK(decoded.session == chunk.session);
        CHECK(decoded.status == chunk.status);
        CHECK(decoded.offset == 100);
        CHECK(decoded.total == chunk.total);
        CHECK(text_of(decoded.data) == data);
        CHECK(decoded.data.data() == frame.data() + 25);  // points into the frame
    }
    // No data, at the end of the file (offset == total), and an empty file.
    SnapshotChunk end;
    end.session = 1;
    end.offset = 42;
    end.total = 42;
    const SnapshotChunk decoded = must(detail::decode_snapshot_chunk(encode(end)));
    CHECK(decoded.offset == 42);
    CHECK(decoded.total == 42);
    CHECK(decoded.data.empty());
    CHECK(must(detail::decode_snapshot_chunk(encode(SnapshotChunk{}))).total == 0);
}

TEST_CASE("snapshot: malformed chunk frames are corruption", "[snapshot]") {
    const std::string data = "abc";
    SnapshotChunk good;
    good.session = 9;
    good.offset = 10;
    good.total = 13;
    good.data = queen::as_bytes(data);
    const Bytes frame = encode(good);
    REQUIRE(detail::decode_snapshot_chunk(frame).has_value());

    SECTION("short") {
        for (std::size_t size = 0; size < 25; ++size) {
            INFO("size " << size);
            CHECK(must_fail(detail::decode_snapshot_chunk(ByteSpan(frame).first(size)))
                      .is(Errc::corruption));
        }
    }
    SECTION("an unknown status") {
        for (Byte status : {Byte{5}, Byte{0x80}, Byte{0xFF}}) {
            Bytes bad = frame;
            bad[8] = status;
            CHECK(must_fail(detail::decode_snapshot_chunk(bad)).is(Errc::corruption));
        }
    }
    SECTION("data beyond the total") {
        SnapshotChunk beyond = good;
        beyond.total = 12;  // 10 + 3 > 12
        CHECK(must_fail(detail::decode_snapshot_chunk(encode(beyond))).is(Errc::corruption));
        SnapshotChunk past = good;
        past.data = {};
        past.offset = 14;  // the offset alone is past the end
        CHECK(must_fail(detail::decode_snapshot_chunk(encode(past))).is(Errc::corruption));
        SnapshotChunk wrap = good;  // offset + size overflows: must not wrap around
        wrap.offset = std::numeric_limits<std::uint64_t>::max() - 1;
        wrap.total = std::numeric_limits<std::uint64_t>::max();
        CHECK(must_fail(detail::decode_snapshot_chunk(encode(wrap))).is(Errc::corruption));
    }
}

// -- the source alone ---------------------------------------------------------------------------

TEST_CASE("snapshot: the source answers behind, preparing, chunks and unknown sessions",
          "[snapshot]") {
    queen::testing::TempDir dir;
    const fs::path out = dir.path() / detail::snapshot_out_dir;
    write_text(out / "1-5" / "data.mdb", "a copy of an earlier run");
    TestClock clock;
    const std::string contents = "hello world";
    std::atomic<int> copies{0};
    // Answers come on the caller's thread (behind, preparing, refusals) or on the source's
    // thread (chunks of a finished copy).
    std::mutex answers_mutex;
    std::vector<std::pair<NodeId, Bytes>> answers;
    const auto answer_count = [&] {
        std::lock_guard lock(answers_mutex);
        return answers.size();
    };
    SnapshotSource source(
        out,
        [&](const fs::path& to) -> queen::Status {
            ++copies;
            return copy_text(to, contents);
        },
        [] { return LogIndex{10}; },
        [&](NodeId to, ByteSpan body) {
            std::lock_guard lock(answers_mutex);
            answers.emplace_back(to, Bytes(body.begin(), body.end()));
        },
        clock, queen::NullLogger::instance());
    CHECK_FALSE(fs::exists(out));  // copies of an earlier run are removed

    const auto ask = [&](NodeId from, SnapshotRequest request) -> SnapshotChunk {
        const std::size_t before = answer_count();
        source.on_request(from, encode(request));
        REQUIRE(eventually([&] { return answer_count() == before + 1; }));
        std::lock_guard lock(answers_mutex);
        CHECK(answers.back().first == from);
        const SnapshotChunk chunk = must(detail::decode_snapshot_chunk(answers.back().second));
        CHECK(chunk.session == request.session);
        return chunk;
    };

    // A malformed request gets no answer.
    source.on_request(follower_id, Bytes(23, 0));
    CHECK(answer_count() == 0);
    // offset > 0 of a session the source never started: a new leader's answer.
    CHECK(ask(follower_id, {42, LogIndex{5}, 7}).status == ChunkStatus::unknown_session);
    // The state has not reached the index yet.
    CHECK(ask(follower_id, {42, LogIndex{11}, 0}).status == ChunkStatus::behind);
    CHECK(copies.load() == 0);
    // It has: a copy starts, the first answer never waits for it.
    CHECK(ask(follower_id, {42, LogIndex{10}, 0}).status == ChunkStatus::preparing);
    CHECK(source.sent_total() == 0);
    SnapshotChunk first;
    CHECK(eventually([&] {
        first = ask(follower_id, {42, LogIndex{10}, 0});
        return first.status != ChunkStatus::preparing;
    }));
    REQUIRE(first.status == ChunkStatus::ok);
    CHECK(copies.load() == 1);
    CHECK(source.sent_total() == 1);  // the whole copy in one chunk
    CHECK(source.sent_bytes_total() == contents.size());
    CHECK(first.offset == 0);
    CHECK(first.total == contents.size());
    CHECK(text_of(first.data) == contents);
    CHECK(fs::exists(out / "2-42" / "data.mdb"));

    const SnapshotChunk middle = ask(follower_id, {42, LogIndex{10}, 6});
    CHECK(middle.status == ChunkStatus::ok);
    CHECK(middle.offset == 6);
    CHECK(text_of(middle.data) == "world");
    const SnapshotChunk beyond = ask(follower_id, {42, LogIndex{10}, 100});
    CHECK(beyond.status == ChunkStatus::ok);
    CHECK(beyond.offset == contents.size());
    CHECK(beyond.data.empty());
    CHECK(source.sent_bytes_total() == contents.size() + 5);

    // Sessions belong to one follower, and only the latest of each follower is known.
    CHECK(ask(NodeId{3}, {42, LogIndex{10}, 6}).status == ChunkStatus::unknown_session);
    CHECK(ask(follower_id, {43, LogIndex{10}, 6}).status == ChunkStatus::unknown_session);
    CHECK(ask(follower_id, {43, LogIndex{10}, 0}).status == ChunkStatus::preparing);
    CHECK(ask(follower_id, {42, LogIndex{10}, 6}).status == ChunkStatus::unknown_session);
    // The thread removes unused copies after each copy. Another follower keeps starting
    // sessions while the test waits for that: each request wakes the thread, but one that comes
    // while it removes files is not seen (see the lost-wakeup test below).
    std::uint64_t other_session = 100;
    const auto poke = [&] {
        CHECK(ask(NodeId{5}, {++other_session, LogIndex{10}, 0}).status == ChunkStatus::preparing);
    };
    // The replaced session's copy goes.
    CHECK(eventually([&] {
        poke();
        return !fs::exists(out / "2-42") && fs::exists(out / "2-43" / "data.mdb");
    }));

    // A session idle for longer than idle_timeout_ms goes with its copy.
    clock.advance_ms(SnapshotSource::idle_timeout_ms + 1);
    CHECK(eventually([&] {
        poke();
        return !fs::exists(out / "2-43");
    }));
    CHECK(ask(follower_id, {43, LogIndex{10}, 6}).status == ChunkStatus::unknown_session);

    source.stop();
    CHECK_FALSE(fs::exists(out));
    const std::size_t before = answer_count();
    source.on_request(follower_id, encode(SnapshotRequest{44, LogIndex{10}, 0}));
    CHECK(answer_count() == before);  // a stopped source is silent
    source.stop();                    // idempotent
}

// -- source and receiver ------------------------------------------------------------------------

TEST_CASE("snapshot: a follower pulls a 10 MiB state in chunks, after the leader catches up",
          "[snapshot]") {
    queen::testing::TempDir dir;
    TestClock clock;
    const fs::path leader_dir = dir.path() / "leader";
    const fs::path fetched = dir.path() / "follower" / detail::snapshot_incoming_dir / "state";
    const LogIndex index{50};
    std::uint64_t copy_size = 0;
    std::uint64_t received = 0;
    Traffic traffic;
    {
        auto env = must(queen::store::Env::open(leader_dir / "state", queen::store::Options{}));
        fill(env, big_records);
        // A stale file where the download goes: fetch empties the directory first.
        write_text(fetched / "stale", "x");

        std::atomic<int> copies{0};
        std::atomic<int> applied_calls{0};
        SnapshotReceiver* receiver_of = nullptr;
        SnapshotSource source(
            leader_dir / detail::snapshot_out_dir,
            [&](const fs::path& to) -> queen::Status {
                ++copies;
                return env.copy_to(to);
            },
            [&] {
                // The leader applies the index only after the follower asked three times.
                return applied_calls.fetch_add(1) < 3 ? LogIndex{index.value() - 1} : index;
            },
            [&](NodeId to, ByteSpan body) {
                CHECK(to == follower_id);
                const SnapshotChunk chunk = must(detail::decode_snapshot_chunk(body));
                traffic.statuses.push_back(chunk.status);
                if (chunk.status == ChunkStatus::ok) {
                    traffic.ok_offsets.push_back(chunk.offset);
                }
                // Noise the receiver must ignore: a malformed frame, and a frame of another
                // session that would make it start over.
                receiver_of->on_chunk(leader_id, Bytes(10, 0xFF));
                SnapshotChunk other;
                other.session = chunk.session + 1;
                other.status = ChunkStatus::failed;
                receiver_of->on_chunk(leader_id, encode(other));
                receiver_of->on_chunk(leader_id, body);
            },
            clock, queen::NullLogger::instance());
        SnapshotReceiver receiver(
            follower_id,
            [&](NodeId to, ByteSpan body) {
                CHECK(to == leader_id);
                traffic.requests.push_back(must(detail::decode_snapshot_request(body)));
                // The receiver's lock is not held here: the answer arrives on this thread.
                source.on_request(follower_id, body);
                return true;
            },
            clock, queen::NullLogger::instance());
        receiver_of = &receiver;

        received = must(receiver.fetch(fetched, index, [] { return leader_id; }));
        CHECK(copies.load() == 1);
        REQUIRE(fs::exists(leader_dir / detail::snapshot_out_dir));
        for (const auto& entry : fs::directory_iterator(leader_dir / detail::snapshot_out_dir)) {
            copy_size = fs::file_size(entry.path() / "data.mdb");
        }
        CHECK(source.sent_total() == 1);
        CHECK(source.sent_bytes_total() == received);
        source.stop();
        CHECK_FALSE(fs::exists(leader_dir / detail::snapshot_out_dir));
    }
    // The bytes: the whole copy, in several chunks, asked for in order.
    CHECK(received > 2 * SnapshotSource::chunk_bytes);
    CHECK(received == copy_size);
    CHECK(fs::file_size(fetched / "data.mdb") == received);
    CHECK_FALSE(fs::exists(fetched / "stale"));
    const std::uint64_t chunks =
        (received + SnapshotSource::chunk_bytes - 1) / SnapshotSource::chunk_bytes;
    std::vector<std::uint64_t> expected_offsets;
    for (std::uint64_t i = 0; i < chunks; ++i) {
        expected_offsets.push_back(i * SnapshotSource::chunk_bytes);
    }
    CHECK(traffic.ok_offsets == expected_offsets);
    // behind while the leader had not applied the index, then preparing while it copied.
    REQUIRE(traffic.statuses.size() >= 4 + chunks);
    CHECK(traffic.statuses[0] == ChunkStatus::behind);
    CHECK(traffic.statuses[2] == ChunkStatus::behind);
    CHECK(traffic.statuses[3] == ChunkStatus::preparing);
    CHECK(traffic.count(ChunkStatus::behind) == 3);
    CHECK(traffic.count(ChunkStatus::ok) == chunks);
    CHECK(traffic.count(ChunkStatus::failed) == 0);
    CHECK(traffic.count(ChunkStatus::unknown_session) == 0);
    // One session throughout (the noise did not make it start over), for the index asked.
    REQUIRE_FALSE(traffic.requests.empty());
    for (const SnapshotRequest& request : traffic.requests) {
        CHECK(request.session == traffic.requests.front().session);
        CHECK(request.index == index);
    }
    CHECK(traffic.requests.front().session != 0);
    CHECK(traffic.requests.back().offset == (chunks - 1) * SnapshotSource::chunk_bytes);
    // The download opens as the leader's state.
    check_filled(fetched, big_records);
}

TEST_CASE("snapshot: a failed copy makes the follower start over with a new session",
          "[snapshot]") {
    queen::testing::TempDir dir;
    TestClock clock;
    const fs::path out = dir.path() / "leader" / detail::snapshot_out_dir;
    const fs::path fetched = dir.path() / "follower" / "state";
    constexpr std::uint64_t big = 4;
    std::uint64_t received = 0;
    Traffic traffic;
    {
        auto env =
            must(queen::store::Env::open(dir.path() / "leader" / "state", queen::store::Options{}));
        fill(env, big);
        std::atomic<int> copies{0};
        SnapshotReceiver* receiver_of = nullptr;
        SnapshotSource source(
            out,
            [&](const fs::path& to) -> queen::Status {
                if (++copies == 1) {
                    return queen::Error{Errc::io, "the first copy fails"};
                }
                return env.copy_to(to);
            },
            [] { return LogIndex{8}; },
            [&](NodeId, ByteSpan body) {
                traffic.statuses.push_back(must(detail::decode_snapshot_chunk(body)).status);
                receiver_of->on_chunk(leader_id, body);
            },
            clock, queen::NullLogger::instance());
        SnapshotReceiver receiver(
            follower_id,
            [&](NodeId, ByteSpan body) {
                traffic.requests.push_back(must(detail::decode_snapshot_request(body)));
                source.on_request(follower_id, body);
                return true;
            },
            clock, queen::NullLogger::instance());
        receiver_of = &receiver;

        received = must(receiver.fetch(fetched, LogIndex{8}, [] { return leader_id; }));
        CHECK(copies.load() == 2);
        // The failed session's directory goes; the second one's stays until stop().
        const fs::path first_copy = out / ("2-" + std::to_string(traffic.requests.front().session));
        CHECK(eventually([&] { return !fs::exists(first_copy); }));
        const fs::path second_copy = out / ("2-" + std::to_string(traffic.requests.back().session));
        CHECK(fs::exists(second_copy / "data.mdb"));
        CHECK(source.sent_total() == 1);
    }
    CHECK(traffic.count(ChunkStatus::failed) == 1);
    CHECK(traffic.count(ChunkStatus::ok) == 1);
    CHECK(traffic.statuses.back() == ChunkStatus::ok);
    // Two sessions: every request after the failure belongs to the second, which starts at 0.
    const auto failed_at = static_cast<std::size_t>(
        std::find(traffic.statuses.begin(), traffic.statuses.end(), ChunkStatus::failed) -
        traffic.statuses.begin());
    REQUIRE(failed_at + 1 < traffic.requests.size());
    const std::uint64_t first_session = traffic.requests.front().session;
    const std::uint64_t second_session = traffic.requests[failed_at + 1].session;
    CHECK(second_session != first_session);
    CHECK(traffic.requests[failed_at + 1].offset == 0);
    for (std::size_t i = 0; i < traffic.requests.size(); ++i) {
        INFO("request " << i);
        CHECK(traffic.requests[i].session == (i <= failed_at ? first_session : second_session));
    }
    CHECK(received == fs::file_size(fetched / "data.mdb"));
    check_filled(fetched, big);
}

TEST_CASE("snapshot: cancel() ends a fetch the leader never answers", "[snapshot]") {
    queen::testing::TempDir dir;
    std::promise<void> asked;
    std::atomic<int> sends{0};
    SnapshotReceiver receiver(
        follower_id,
        [&](NodeId, ByteSpan) {
            if (sends.fetch_add(1) == 0) {
                asked.set_value();
            }
            return true;  // sent, never answered
        },
        queen::SystemClock::instance(), queen::NullLogger::instance());
    auto fetching = std::async(std::launch::async, [&] {
        return receiver.fetch(dir.path() / "state", LogIndex{3}, [] { return leader_id; });
    });
    asked.get_future().wait();
    const auto cancelled_at = std::chrono::steady_clock::now();
    receiver.cancel();
    const auto result = fetching.get();
    // Woken by cancel(), not by the 2 s answer timeout.
    CHECK(std::chrono::steady_clock::now() - cancelled_at < std::chrono::milliseconds(1500));
    REQUIRE_FALSE(result.has_value());
    CHECK(result.error().is(Errc::cancelled));
    CHECK(sends.load() == 1);
    // Every later fetch is cancelled too, without asking anyone.
    CHECK(must_fail(receiver.fetch(dir.path() / "state", LogIndex{3}, [] {
              return leader_id;
          })).is(Errc::cancelled));
    CHECK(sends.load() == 1);
}

TEST_CASE("snapshot: cancel() ends a fetch waiting for a leader", "[snapshot]") {
    queen::testing::TempDir dir;
    std::atomic<int> sends{0};
    std::promise<void> looked;
    std::atomic<int> looks{0};
    SnapshotReceiver receiver(
        follower_id,
        [&](NodeId, ByteSpan) {
            ++sends;
            return true;
        },
        queen::SystemClock::instance(), queen::NullLogger::instance());
    auto fetching = std::async(std::launch::async, [&] {
        return receiver.fetch(dir.path() / "state", LogIndex{3}, [&] {
            if (looks.fetch_add(1) == 1) {
                looked.set_value();  // the second look: it waited once
            }
            return looks.load() % 2 == 0 ? queen::raft::no_node : follower_id;  // none, or self
        });
    });
    looked.get_future().wait();
    receiver.cancel();
    CHECK(must_fail(fetching.get()).is(Errc::cancelled));
    CHECK(sends.load() == 0);  // neither no_node nor itself is asked
}

// -- installing ---------------------------------------------------------------------------------

namespace {

const InstallMeta meta{LogIndex{900}, Term{7}};

/// A tenant directory with its own state and a complete download in snapshot.incoming.
void make_tenant(const fs::path& tenant) {
    write_text(tenant / "state" / "data.mdb", "old data");
    write_text(tenant / "state" / "lock.mdb", "old lock");
    write_text(tenant / "state" / "checkpoint.meta", "old checkpoint");
    write_text(tenant / "log" / "00000001.log", "log");
    write_text(tenant / detail::snapshot_incoming_dir / "state" / "data.mdb", "new data");
}

const std::map<std::string, std::string> old_layout{
    {"state/data.mdb", "old data"},
    {"state/lock.mdb", "old lock"},
    {"state/checkpoint.meta", "old checkpoint"},
    {"log/00000001.log", "log"},
};
// The whole state directory is the download's: the old lock file and checkpoint are gone.
const std::map<std::string, std::string> new_layout{
    {"state/data.mdb", "new data"},
    {"log/00000001.log", "log"},
};

/// What Tenant::open does at start: finish a committed install, drop a download cut short.
std::optional<InstallMeta> restart(const fs::path& tenant) {
    const std::optional<InstallMeta> install = must(detail::pending_install(tenant));
    if (install) {
        must(detail::move_installed_state(tenant));
    }
    must(detail::finish_install(tenant));
    return install;
}

}  // namespace

TEST_CASE("snapshot: the install steps in order, each idempotent", "[snapshot]") {
    queen::testing::TempDir dir;
    const fs::path tenant = dir.path() / "tenant";
    make_tenant(tenant);
    CHECK(must(detail::pending_install(tenant)) == std::nullopt);

    must(detail::commit_download(tenant, meta));
    CHECK_FALSE(fs::exists(tenant / detail::snapshot_incoming_dir));
    auto expected = old_layout;
    expected["snapshot.install/state/data.mdb"] = "new data";
    expected["snapshot.install/meta"] = read_text(tenant / "snapshot.install" / "meta");
    CHECK(layout(tenant) == expected);
    const auto pending = must(detail::pending_install(tenant));
    REQUIRE(pending.has_value());
    CHECK(pending->index == meta.index);
    CHECK(pending->term == meta.term);

    must(detail::move_installed_state(tenant));
    CHECK(layout(tenant) == std::map<std::string, std::string>{
                                {"state/data.mdb", "new data"},
                                {"log/00000001.log", "log"},
                                {"snapshot.install/meta", expected.at("snapshot.install/meta")}});
    must(detail::move_installed_state(tenant));  // again: the state stays the download's
    CHECK(read_text(tenant / "state" / "data.mdb") == "new data");
    CHECK(must(detail::pending_install(tenant)).has_value());

    must(detail::finish_install(tenant));
    CHECK(layout(tenant) == new_layout);
    CHECK(must(detail::pending_install(tenant)) == std::nullopt);
    must(detail::finish_install(tenant));  // again: nothing to remove
    must(detail::move_installed_state(tenant));
    CHECK(layout(tenant) == new_layout);
}

TEST_CASE("snapshot: a crash after any install step is finished by the next start", "[snapshot]") {
    struct Crash {
        const char* name;
        std::function<void(const fs::path&)> before;  // the steps done before the crash
        bool is_committed;                            // the download survives it
    };
    const auto commit = [](const fs::path& t) { must(detail::commit_download(t, meta)); };
    const auto move = [](const fs::path& t) { must(detail::move_installed_state(t)); };
    const std::vector<Crash> crashes{
        {"while downloading", [](const fs::path&) {}, false},
        {"in commit_download, meta written, not renamed",
         [](const fs::path& t) {
             must(detail::write_file_durably(t / detail::snapshot_incoming_dir / "meta",
                                             "index = 900\nterm = 7\n"));
         },
         false},
        {"after commit_download", commit, true},
        {"in move_installed_state, old state removed",
         [&](const fs::path& t) {
             commit(t);
             must(detail::remove_tree_durably(t / "state"));
         },
         true},
        {"in move_installed_state, old state partly removed",
         [&](const fs::path& t) {
             commit(t);
             fs::remove(t / "state" / "data.mdb");
         },
         true},
        {"after move_installed_state",
         [&](const fs::path& t) {
             commit(t);
             move(t);
         },
         true},
        {"in finish_install, snapshot.install removed",
         [&](const fs::path& t) {
             commit(t);
             move(t);
             must(detail::remove_tree_durably(t / detail::snapshot_install_dir));
         },
         true},
        {"after finish_install",
         [&](const fs::path& t) {
             commit(t);
             move(t);
             must(detail::finish_install(t));
         },
         true},
    };
    for (const Crash& crash : crashes) {
        INFO("crash " << crash.name);
        queen::testing::TempDir dir;
        const fs::path tenant = dir.path() / "tenant";
        make_tenant(tenant);
        crash.before(tenant);
        const bool is_pending = fs::exists(tenant / detail::snapshot_install_dir);
        const std::optional<InstallMeta> resumed = restart(tenant);
        CHECK(resumed.has_value() == is_pending);
        if (resumed) {
            CHECK(resumed->index == meta.index);
            CHECK(resumed->term == meta.term);
        }
        CHECK(layout(tenant) == (crash.is_committed ? new_layout : old_layout));
        // A crash during the restart: the next one ends the same way.
        CHECK(restart(tenant) == std::nullopt);
        CHECK(layout(tenant) == (crash.is_committed ? new_layout : old_layout));
    }
}

TEST_CASE("snapshot: an install without a state (the state held the snapshot) keeps the state",
          "[snapshot]") {
    queen::testing::TempDir dir;
    const fs::path tenant = dir.path() / "tenant";
    make_tenant(tenant);
    fs::remove_all(tenant / detail::snapshot_incoming_dir);
    must(detail::create_directories_durably(tenant / detail::snapshot_incoming_dir));
    must(detail::commit_download(tenant, meta));
    const auto resumed = restart(tenant);
    REQUIRE(resumed.has_value());
    CHECK(resumed->index == meta.index);
    CHECK(layout(tenant) == old_layout);
}

TEST_CASE("snapshot: pending_install reads the meta and refuses a garbled one", "[snapshot]") {
    queen::testing::TempDir dir;
    const fs::path tenant = dir.path();
    const fs::path meta_path = tenant / detail::snapshot_install_dir / "meta";
    CHECK(must(detail::pending_install(tenant)) == std::nullopt);

    write_text(meta_path, "term = 3\n\nindex   =   18446744073709551615\n");
    const auto parsed = must(detail::pending_install(tenant));
    REQUIRE(parsed.has_value());
    CHECK(parsed->index == LogIndex{std::numeric_limits<std::uint64_t>::max()});
    CHECK(parsed->term == Term{3});

    for (const char* garbage :
         {"", "garbage", "index = 5\n", "index 5\nterm 3\n", "index = five\nterm = 3\n",
          "index = 5\nterm : 3\n", "index = 18446744073709551616\nterm = 3\n"}) {
        INFO("meta \"" << garbage << "\"");
        write_text(meta_path, garbage);
        CHECK(must_fail(detail::pending_install(tenant)).is(Errc::corruption));
    }
    fs::remove(meta_path);  // snapshot.install without its meta
    CHECK(must_fail(detail::pending_install(tenant)).is(Errc::corruption));
}

TEST_CASE("snapshot: pending_install refuses a meta that names a field twice", "[snapshot]") {
    // A record with `index` twice and no `term` is not an install record.
    queen::testing::TempDir dir;
    write_text(dir.path() / detail::snapshot_install_dir / "meta", "index = 5\nindex = 6\n");
    CHECK(must_fail(detail::pending_install(dir.path())).is(Errc::corruption));
}

TEST_CASE("snapshot: a crash inside finish_install's removal is finished by the next start",
          "[snapshot]") {
    // finish_install renames snapshot.install before removing its files: a crash while they
    // are removed (the meta gone, the directory left) is not taken for a damaged install.
    queen::testing::TempDir dir;
    const fs::path tenant = dir.path() / "tenant";
    make_tenant(tenant);
    must(detail::commit_download(tenant, meta));
    must(detail::move_installed_state(tenant));
    fs::rename(tenant / detail::snapshot_install_dir, tenant / "snapshot.done");
    fs::remove(tenant / "snapshot.done" / "meta");  // the crash
    CHECK(detail::pending_install(tenant).has_value());
    CHECK_FALSE(detail::pending_install(tenant)->has_value());
    restart(tenant);
    CHECK(layout(tenant) == new_layout);
}
