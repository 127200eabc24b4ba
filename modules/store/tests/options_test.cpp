// modules/store/tests/options_test.cpp — Options::validate and sync mode names.
#include "queen/store/options.hpp"

#include "helpers.hpp"

namespace queen::store::test {
namespace {

TEST_CASE("store: default options are valid", "[store][options]") {
    must(Options{}.validate());
}

TEST_CASE("store: validate names the field that is out of range", "[store][options]") {
    Options options;
    SECTION("map size not a multiple of 4096") {
        options.map_size_bytes = (1 << 20) + 1;
        const auto error = must_fail(options.validate());
        CHECK(error.is(Errc::invalid_argument));
        CHECK_THAT(error.message(), Catch::Contains("store.map_size_bytes"));
    }
    SECTION("map size below 64 KiB") {
        options.map_size_bytes = 4096;
        CHECK_THAT(must_fail(options.validate()).message(), Catch::Contains("at least 65536"));
    }
    SECTION("max below initial") {
        options.map_size_bytes_max = options.map_size_bytes - 4096;
        CHECK_THAT(must_fail(options.validate()).message(),
                   Catch::Contains("store.map_size_bytes_max"));
    }
    SECTION("max above 2^48") {
        options.map_size_bytes_max = (std::uint64_t{1} << 48) + 4096;
        CHECK(must_fail(options.validate()).is(Errc::invalid_argument));
    }
    SECTION("tables_max zero") {
        options.tables_max = 0;
        CHECK_THAT(must_fail(options.validate()).message(), Catch::Contains("store.tables_max"));
    }
    SECTION("readers_max too large") {
        options.readers_max = 100000;
        CHECK_THAT(must_fail(options.validate()).message(), Catch::Contains("store.readers_max"));
    }
    SECTION("unknown sync mode value") {
        options.sync_mode = static_cast<SyncMode>(7);
        CHECK_THAT(must_fail(options.validate()).message(), Catch::Contains("store.sync_mode"));
    }
}

TEST_CASE("store: sync mode names round-trip", "[store][options]") {
    for (const SyncMode mode : {SyncMode::durable, SyncMode::no_meta_sync, SyncMode::no_sync}) {
        CHECK(must(parse_sync_mode(to_string(mode))) == mode);
    }
    const auto error = must_fail(parse_sync_mode("fast"));
    CHECK(error.is(Errc::invalid_argument));
    CHECK_THAT(error.message(), Catch::Contains("'fast'"));
}

TEST_CASE("store: every Errc has a message in the queen.store category", "[store][options]") {
    CHECK(std::string(error_category().name()) == "queen.store");
    for (int code = 0; code <= static_cast<int>(Errc::internal); ++code) {
        const std::error_code ec = make_error_code(static_cast<Errc>(code));
        CHECK_THAT(ec.message(), !Catch::Contains("unknown"));
    }
    const std::error_code poisoned = Errc::poisoned;
    CHECK(poisoned.category() == error_category());
}

}  // namespace
}  // namespace queen::store::test
