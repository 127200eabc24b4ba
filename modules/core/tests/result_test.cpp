// modules/core/tests/result_test.cpp — Result<T>, Error, QUEEN_TRY and always-on assertions.
#include "queen/core/result.hpp"

#include <cerrno>
#include <string>

#include "queen/testing/catch.hpp"
#include "queen/testing/support.hpp"

namespace {
queen::Result<int> parse_positive(int value) {
    if (value <= 0) {
        return queen::Error{queen::Errc::invalid_argument, "value " + std::to_string(value)};
    }
    return value;
}
queen::Result<int> doubled(int value) {
    QUEEN_TRY(int parsed, parse_positive(value));
    return parsed * 2;
}
queen::Status check(int value) {
    QUEEN_TRY(parse_positive(value));
    return {};
}
}  // namespace

TEST_CASE("core: Result carries a value or an error, QUEEN_TRY propagates", "[core][result]") {
    auto good = doubled(21);
    REQUIRE(good.has_value());
    CHECK(*good == 42);
    auto bad = doubled(-1);
    REQUIRE_FALSE(bad);
    CHECK(bad.error().is(queen::Errc::invalid_argument));
    CHECK(bad.error().message() == "value -1: invalid argument");
    CHECK(check(1).has_value());
    CHECK_FALSE(check(0).has_value());
    CHECK(bad.value_or(7) == 7);
}

TEST_CASE("core: errno_error maps ENOSPC to disk_full and keeps the reason", "[core][result]") {
    auto full = queen::errno_error(ENOSPC, "write seg");
    CHECK(full.is(queen::Errc::disk_full));
    CHECK(full.context.find("No space left") != std::string::npos);
    CHECK(queen::errno_error(EIO, "fsync").is(queen::Errc::io));
}

TEST_CASE("core: a failing assertion reaches the installed handler", "[core][assert]") {
    queen::testing::AssertCapture capture;
    auto bad = parse_positive(0);
    CHECK_THROWS_AS(bad.value(), queen::testing::AssertionFired);
    CHECK_THROWS_WITH(([] { QUEEN_ASSERT(1 + 1 == 3, "math ", 42); }()),
                      Catch::Contains("math 42"));
}

TEST_CASE("core: an EnumErrorCategory names its codes and numbers unknown ones", "[core][result]") {
    const std::error_category& category = queen::error_category();
    CHECK(std::string(category.name()) == "queen");
    CHECK(category.message(static_cast<int>(queen::Errc::poisoned)) ==
          "poisoned by an earlier storage failure");
    CHECK(category.message(999) == "unknown error 999");
    CHECK(queen::make_error_code(queen::Errc::busy).message() == "busy");
}
