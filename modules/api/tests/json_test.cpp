// api/tests/json_test.cpp — the JSON edge: writer, ISO-8601 times, body parsing, field readers.
#include "json.hpp"
#include "format.hpp"
#include "queen/core/json_scan.hpp"
#include "queen/core/rng.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/support.hpp"

namespace queen::api::detail {
namespace {

TEST_CASE("api: JsonWriter places commas and escapes strings", "[api][json]") {
    JsonWriter out;
    out.begin_object()
        .field("a", 1)
        .field("b", "x\"y\n")
        .field_or_null("c", "")
        .key("d")
        .begin_array()
        .boolean(true)
        .null()
        .number(-7)
        .raw("{\"k\":[1]}")
        .end_array()
        .key("e")
        .begin_object()
        .end_object()
        .end_object();
    const std::string text = out.take();
    CHECK(text == R"({"a":1,"b":"x\"y\n","c":null,"d":[true,null,-7,{"k":[1]}],"e":{}})");
    // Nesting is tracked without allocation up to 64 levels.
    JsonWriter deep;
    for (int i = 0; i < 64; ++i) {
        deep.begin_array().number(i);
    }
    for (int i = 0; i < 64; ++i) {
        deep.end_array();
    }
    const std::string deep_text = deep.take();
    CHECK(nlohmann::json::parse(deep_text)[1][1][0] == 2);
    CHECK(nlohmann::json::parse(text)["b"] == "x\"y\n");
}

TEST_CASE("api: ISO-8601 formatting and parsing round-trip", "[api][json]") {
    CHECK(format_iso_ms(0) == "1970-01-01T00:00:00.000Z");
    CHECK(format_iso_ms(1'700'000'000'123) == "2023-11-14T22:13:20.123Z");
    CHECK(format_iso_us(1'700'000'000'123) == "2023-11-14T22:13:20.123000Z");
    CHECK(format_iso_ms(-1) == "1969-12-31T23:59:59.999Z");
    // The digit path covers years 0..9999; outside it the printf form is kept.
    CHECK(format_iso_ms(253'402'300'799'999) == "9999-12-31T23:59:59.999Z");
    CHECK(format_iso_us(253'402'300'800'000) == "10000-01-01T00:00:00.000000Z");
    CHECK(format_iso_ms(-62'167'219'200'000) == "0000-01-01T00:00:00.000Z");
    CHECK(format_iso_ms(-62'167'219'200'001) == "-001-12-31T23:59:59.999Z");
    CHECK(parse_iso("2023-11-14T22:13:20.123Z") == 1'700'000'000'123);
    CHECK(parse_iso("2023-11-14T22:13:20.123456Z") == 1'700'000'000'123);
    CHECK(parse_iso("2023-11-14T23:13:20.123+01:00") == 1'700'000'000'123);
    CHECK(parse_iso("2023-11-14T21:13:20.123-0100") == 1'700'000'000'123);
    CHECK(parse_iso("2023-11-14 22:13:20.123") == 1'700'000'000'123);
    CHECK(parse_iso("2023-11-14") == 1'699'920'000'000);
    CHECK(parse_iso("2024-02-29T00:00Z").has_value());
    for (const char* bad :
         {"", "now", "2023-13-01", "2023-02-29", "2023-11-14T25:00:00Z", "2023-11-14T22:13:20.Z",
          "2023-11-14T22:13:20Zjunk", "20231114", "2023-11-14T22", "2023-11-14T22:13:20+25:00"}) {
        INFO(bad);
        CHECK_FALSE(parse_iso(bad).has_value());
    }
    const std::uint64_t seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    Rng rng(seed);
    for (int i = 0; i < 10'000; ++i) {
        // Years 1900..2400 in milliseconds.
        const auto ms =
            static_cast<std::int64_t>(rng.below(15'778'800'000'000ULL)) - 2'208'988'800'000LL;
        INFO(ms);
        REQUIRE(parse_iso(format_iso_ms(ms)) == ms);
        REQUIRE(parse_iso(format_iso_us(ms)) == ms);
        JsonWriter times;
        times.begin_array().iso_time(ms, false).iso_time(ms, true).end_array();
        REQUIRE(times.take() == "[\"" + format_iso_ms(ms) + "\",\"" + format_iso_us(ms) + "\"]");
    }
}

TEST_CASE("api: body parsing errors use the documented messages", "[api][json]") {
    CHECK(parse_body("", 8).error().context == "Empty request body");
    CHECK(parse_body(" \r\n", 8).error().context == "Empty request body");
    CHECK_THAT(parse_body("{\"a\":", 8).error().context, Catch::StartsWith("Invalid JSON: "));
    CHECK_THAT(parse_body("[[[[[[[[[1]]]]]]]]]", 8).error().context,
               Catch::Contains("deeper than 8"));
    CHECK(parse_body("[[[[[[[[1]]]]]]]]", 8).has_value());
    CHECK(json_depth("\"[[[[\"") == 0);
    CHECK(json_depth(R"({"a":"\"{{{","b":[{}]})") == 3);
    // A million brackets are refused before the parser builds anything.
    CHECK_FALSE(parse_body(std::string(1'000'000, '['), 64).has_value());
}

TEST_CASE("api: typed field readers", "[api][json]") {
    const auto body = nlohmann::json::parse(
        R"({"i": 5, "f": 2.0, "h": 2.5, "s": "x", "b": true, "n": null, "big": 18446744073709551615})");
    CHECK(integer_field(body, "i", 0, 0, 10).value() == 5);
    CHECK(integer_field(body, "f", 0, 0, 10).value() == 2);
    CHECK(integer_field(body, "n", 9, 0, 10).value() == 9);
    CHECK(integer_field(body, "missing", 9, 0, 10).value() == 9);
    CHECK_FALSE(integer_field(body, "h", 0, 0, 10).has_value());
    CHECK_FALSE(integer_field(body, "s", 0, 0, 10).has_value());
    CHECK_FALSE(integer_field(body, "i", 0, 6, 10).has_value());
    CHECK_FALSE(integer_field(body, "big", 0, 0, INT64_MAX).has_value());
    CHECK(boolean_field(body, "b", false).value());
    CHECK_FALSE(boolean_field(body, "s", false).has_value());
    CHECK(string_field(body, "s", "bad").value() == std::optional<std::string>("x"));
    CHECK_FALSE(string_field(body, "n", "bad").value().has_value());
    CHECK(string_field(body, "i", "i must be a string").error().context == "i must be a string");
    CHECK(is_uuid_text("0b9e4c1a-6b1f-4c5e-9d3a-1f2e3d4c5b6a"));
    CHECK_FALSE(is_uuid_text("0b9e4c1a-6b1f-4c5e-9d3a-1f2e3d4c5b6"));
    CHECK_FALSE(is_uuid_text("0b9e4c1a_6b1f-4c5e-9d3a-1f2e3d4c5b6a"));
    CHECK_FALSE(is_uuid_text("0b9e4c1a-6b1f-4c5e-9d3a-1f2e3d4c5b6g"));
    // Invalid UTF-8 inside a string does not throw when re-serialized.
    nlohmann::json odd = std::string("a\xff");
    CHECK(dump_json(odd).size() > 2);
}

TEST_CASE("api: JsonWriter strings equal the general escaper at every length", "[api][json]") {
    // Short plain strings take a direct copy, the rest the word-at-a-time escaper: both must
    // write what json::scan::append_quoted writes, for keys and for values.
    const std::uint64_t seed = testing::seed_from_env();
    INFO("QUEEN_SEED=" << seed);
    Rng rng(seed);
    const std::string alphabet = std::string("abcXYZ09 -_/\"\\\n\t\x01\x1f") + "\xc3\xa9";
    for (int round = 0; round < 2000; ++round) {
        const std::size_t size = rng.below(80);
        std::string text;
        for (std::size_t i = 0; i < size; ++i) {
            // Mostly plain bytes, so that both paths are taken at every length.
            text.push_back(rng.chance(0.97) ? static_cast<char>('a' + rng.below(26))
                                            : alphabet[rng.below(alphabet.size())]);
        }
        std::string expected = "{";
        json::scan::append_quoted(expected, text);
        expected += ":";
        json::scan::append_quoted(expected, text);
        expected += "}";
        JsonWriter out;
        out.begin_object().key(text).string(text).end_object();
        const std::string written = out.take();
        REQUIRE(written == expected);
    }
}

TEST_CASE("api: JsonWriter grows from any capacity and matches nlohmann's text", "[api][json]") {
    // The buffer starts at 0, 1 or a guess and doubles; the text must not depend on where the
    // growth steps fall.
    const std::uint64_t seed = testing::seed_from_env();
    INFO("QUEEN_SEED=" << seed);
    Rng rng(seed);
    for (const std::size_t capacity : {std::size_t{0}, std::size_t{1}, std::size_t{300}}) {
        JsonWriter out(capacity);
        nlohmann::ordered_json expected = nlohmann::ordered_json::array();
        out.begin_array();
        for (int i = 0; i < 500; ++i) {
            const std::int64_t number = static_cast<std::int64_t>(rng.next() >> 1) - (1LL << 61);
            const std::string text(rng.below(100), static_cast<char>('a' + rng.below(26)));
            out.begin_object()
                .field("n", number)
                .field("s", text)
                .field("b", i % 2 == 0)
                .null_field("z")
                .key("t")
                .iso_time(1'700'000'000'123 + i, i % 3 == 0)
                .end_object();
            expected.push_back({{"n", number},
                                {"s", text},
                                {"b", i % 2 == 0},
                                {"z", nullptr},
                                {"t", i % 3 == 0 ? format_iso_us(1'700'000'000'123 + i)
                                                 : format_iso_ms(1'700'000'000'123 + i)}});
        }
        out.end_array();
        CHECK(out.text().size() == expected.dump().size());
        const std::string text = out.take();
        REQUIRE(text == expected.dump());
    }
}

TEST_CASE("api: ids written in place equal queues::format_uuid", "[api][json]") {
    const std::uint64_t seed = testing::seed_from_env();
    INFO("QUEEN_SEED=" << seed);
    Rng rng(seed);
    const queues::UuidKind kinds[] = {queues::UuidKind::queue, queues::UuidKind::partition,
                                      queues::UuidKind::lease, queues::UuidKind::trace};
    for (int round = 0; round < 1000; ++round) {
        const queues::UuidKind kind = kinds[rng.below(4)];
        const std::uint64_t high =
            round == 0 ? (std::uint64_t{1} << 48) - 1 : rng.next() >> (16 + rng.below(48));
        const std::uint64_t low = round == 0 ? ~std::uint64_t{0} : rng.next() >> rng.below(64);
        JsonWriter out;
        out.begin_array().number(round);
        write_uuid(out, kind, high, low);
        out.end_array();
        REQUIRE(out.take() ==
                "[" + std::to_string(round) + ",\"" + queues::format_uuid(kind, high, low) + "\"]");
    }
    for (int round = 0; round < 1000; ++round) {
        const queues::MessageId id{queues::PartitionId{rng.next() >> rng.below(64)},
                                   queues::Sequence{rng.next() >> rng.below(64)}};
        // Mostly today's times; sometimes before 1970 or past the 48 bits (clamped).
        const TimestampMs created_at{
            round % 10 == 1   ? -static_cast<std::int64_t>(rng.below(1'000'000))
            : round % 10 == 2 ? static_cast<std::int64_t>(rng.next() >> 1)
                              : 1'700'000'000'000 + static_cast<std::int64_t>(rng.below(1 << 30))};
        JsonWriter out;
        out.begin_object().key("m");
        write_message_id(out, id, created_at);
        out.key("p");
        write_partition_id(out, id.partition);
        out.end_object();
        REQUIRE(out.take() == "{\"m\":\"" + queues::format_message_id(id, created_at) +
                                  "\",\"p\":\"" + queues::format_partition_id(id.partition) +
                                  "\"}");
    }
}

}  // namespace
}  // namespace queen::api::detail
