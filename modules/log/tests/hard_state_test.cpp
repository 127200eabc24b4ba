// modules/log/tests/hard_state_test.cpp — HardStateFile: saves survive a reopen, a save torn at
// any byte leaves the previous state, a failed save poisons, damage to both slots is corruption.
#include "queen/log/hard_state.hpp"

#include <fstream>

#include "faulty_file_system.hpp"
#include "queen/core/rng.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/support.hpp"

using namespace queen;
using namespace queen::log;

namespace {

std::string read_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_file(const std::filesystem::path& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << bytes;
}

HardState state_of(std::uint64_t n) {
    return HardState{Term{n}, NodeId{n % 3 + 1}, LogIndex{n * 10}};
}

}  // namespace

TEST_CASE("log: a hard state file starts at zero and returns the last save after a reopen",
          "[log][hard_state]") {
    queen::testing::TempDir dir;
    {
        auto file = HardStateFile::open(dir.path());
        REQUIRE(file);
        CHECK(file->current() == HardState{});
        CHECK_FALSE(std::filesystem::exists(dir.path() / hard_state_file_name));  // not yet saved
        for (std::uint64_t n = 1; n <= 5; ++n) {
            REQUIRE(file->save(state_of(n)));
            CHECK(file->current() == state_of(n));
            auto reopened = HardStateFile::open(dir.path());
            REQUIRE(reopened);
            CHECK(reopened->current() == state_of(n));
        }
    }
    CHECK(std::filesystem::file_size(dir.path() / hard_state_file_name) ==
          2 * hard_state_slot_bytes);
    // A reopened file goes on from where it was: the next save lands in the other slot.
    auto file = HardStateFile::open(dir.path());
    REQUIRE(file);
    REQUIRE(file->save(state_of(6)));
    auto reopened = HardStateFile::open(dir.path());
    REQUIRE(reopened);
    CHECK(reopened->current() == state_of(6));
}

TEST_CASE("log: a hard state save torn at any byte leaves the previous state",
          "[log][hard_state]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    Rng rng(seed);
    queen::testing::TempDir dir;
    const auto path = dir.path() / hard_state_file_name;
    std::string before;  // the file after save n - 1
    std::string after;   // the file after save n
    {
        auto file = HardStateFile::open(dir.path());
        REQUIRE(file);
        for (std::uint64_t n = 1; n <= 3; ++n) {
            REQUIRE(file->save(state_of(n)));
        }
        before = read_file(path);
        REQUIRE(file->save(state_of(4)));
        after = read_file(path);
    }
    // Save 4 wrote one slot: the bytes where `before` and `after` differ lie in it.
    const auto first = static_cast<std::size_t>(
        std::mismatch(before.begin(), before.end(), after.begin()).first - before.begin());
    const std::size_t slot = first / hard_state_slot_bytes * hard_state_slot_bytes;
    for (std::size_t torn_at = 0; torn_at < hard_state_slot_bytes; ++torn_at) {
        INFO("torn at byte " << torn_at);
        // The new bytes up to the tear, then what the disk held before, zeros or garbage.
        std::string torn = before;
        std::copy_n(after.begin() + static_cast<std::ptrdiff_t>(slot), torn_at,
                    torn.begin() + static_cast<std::ptrdiff_t>(slot));
        const std::uint64_t rest = rng.below(3);
        for (std::size_t i = slot + torn_at; i < slot + hard_state_slot_bytes && rest != 0; ++i) {
            torn[i] = rest == 1 ? '\0' : static_cast<char>(rng.next());
        }
        write_file(path, torn);
        auto file = HardStateFile::open(dir.path());
        REQUIRE(file);
        // The CRC covers the first 52 bytes of a slot; the padding after them is not read, so a
        // tear in it leaves the new slot whole.
        CHECK(file->current() == (torn_at >= 52 ? state_of(4) : state_of(3)));
    }
    write_file(path, after);
    auto file = HardStateFile::open(dir.path());
    REQUIRE(file);
    CHECK(file->current() == state_of(4));
}

TEST_CASE("log: a torn first hard state save is no save, damage to both slots is corruption",
          "[log][hard_state]") {
    queen::testing::TempDir dir;
    const auto path = dir.path() / hard_state_file_name;
    SECTION("the first save wrote part of its slot, the other was never written") {
        write_file(path, std::string(hard_state_slot_bytes, '\0') + "QUEENHS");
        auto file = HardStateFile::open(dir.path());
        REQUIRE(file);
        CHECK(file->current() == HardState{});
        REQUIRE(file->save(state_of(7)));
        auto reopened = HardStateFile::open(dir.path());
        REQUIRE(reopened);
        CHECK(reopened->current() == state_of(7));
    }
    SECTION("both slots written, neither valid") {
        write_file(path, std::string(2 * hard_state_slot_bytes, 'x'));
        auto file = HardStateFile::open(dir.path());
        REQUIRE_FALSE(file);
        CHECK(file.error().is(Errc::corruption));
    }
    SECTION("a file longer than two slots") {
        write_file(path, std::string(2 * hard_state_slot_bytes + 1, '\0'));
        auto file = HardStateFile::open(dir.path());
        REQUIRE_FALSE(file);
        CHECK(file.error().is(Errc::corruption));
    }
}

TEST_CASE("log: a failed hard state save poisons the file and a reopen finds old or new",
          "[log][hard_state]") {
    queen::testing::TempDir dir;
    queen::log::testing::Faults faults;
    queen::log::testing::FaultyFileSystem fs(faults);
    auto file = HardStateFile::open(dir.path(), fs);
    REQUIRE(file);
    REQUIRE(file->save(state_of(1)));
    SECTION("fdatasync fails") {
        faults.fail_sync_after = 1;
    }
    SECTION("the write fails") {
        faults.fail_write_after = 1;
    }
    SECTION("the disk is full") {
        faults.fail_write_after = 1;
        faults.write_errno = ENOSPC;
    }
    auto failed = file->save(state_of(2));
    REQUIRE_FALSE(failed);
    CHECK(file->current() == state_of(1));
    auto again = file->save(state_of(3));
    REQUIRE_FALSE(again);
    CHECK(again.error().is(Errc::poisoned));
    auto reopened = HardStateFile::open(dir.path());
    REQUIRE(reopened);
    CHECK((reopened->current() == state_of(1) || reopened->current() == state_of(2)));
    REQUIRE(reopened->save(state_of(4)));
    CHECK(HardStateFile::open(dir.path())->current() == state_of(4));
}

TEST_CASE("log: read_hard_state reads without creating or changing the file", "[log][hard_state]") {
    queen::testing::TempDir dir;
    auto none = read_hard_state(dir.path());
    REQUIRE(none.has_value());
    CHECK_FALSE(none->has_value());
    CHECK_FALSE(std::filesystem::exists(dir.path() / hard_state_file_name));
    {
        auto file = HardStateFile::open(dir.path());
        REQUIRE(file);
        REQUIRE(file->save(state_of(8)));
        REQUIRE(file->save(state_of(9)));
    }
    const std::string before = read_file(dir.path() / hard_state_file_name);
    auto read = read_hard_state(dir.path());
    REQUIRE(read.has_value());
    REQUIRE(read->has_value());
    CHECK(**read == state_of(9));
    CHECK(read_file(dir.path() / hard_state_file_name) == before);
    write_file(dir.path() / hard_state_file_name, std::string(2 * hard_state_slot_bytes, 'x'));
    auto damaged = read_hard_state(dir.path());
    REQUIRE_FALSE(damaged.has_value());
    CHECK(damaged.error().is(Errc::corruption));
}
