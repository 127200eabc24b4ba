// core/tests/json_scan_test.cpp — the one JSON reader (scanner and cursor) agrees with
// nlohmann/json on random valid and corrupted documents (seeded) and decodes strings and members
// the same way; the plain-string loop at every offset; the writer over a reused buffer.
#include "queen/core/json_scan.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "queen/core/json_cursor.hpp"
#include "queen/core/json_writer.hpp"
#include "queen/core/rng.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/support.hpp"

namespace {

using nlohmann::json;
using queen::json::decode_json_string;
using queen::json::for_each_element;
using queen::json::for_each_member;
using queen::json::is_valid_json;

std::string random_whitespace(queen::Rng& rng) {
    static constexpr const char* spaces[] = {"", "", "", " ", "\n", "\t ", "\r\n"};
    return spaces[rng.below(7)];
}

std::string random_string_literal(queen::Rng& rng) {
    static const std::vector<std::string> pieces = {"a",
                                                    "Z",
                                                    "0",
                                                    " ",
                                                    "\\\"",
                                                    "\\\\",
                                                    "\\/",
                                                    "\\b",
                                                    "\\f",
                                                    "\\n",
                                                    "\\r",
                                                    "\\t",
                                                    "\\u0041",
                                                    "\\u00e9",
                                                    "é",
                                                    "日本",
                                                    "\xF0\x9F\x98\x80",
                                                    "\\ud83d\\ude00",
                                                    "\\u0000",
                                                    "\x7F",
                                                    "~",
                                                    "\\u20AC"};
    std::string text = "\"";
    const auto count = rng.below(6);
    for (std::uint64_t i = 0; i < count; ++i) {
        text += pieces[rng.below(pieces.size())];
    }
    return text + "\"";
}

std::string random_number(queen::Rng& rng) {
    static const std::vector<std::string> numbers = {
        "0", "-0", "7", "-12", "3.25", "1e5", "-2.5E-3", "1E+2", "123456789012", "0.0"};
    return numbers[rng.below(numbers.size())];
}

std::string random_value(queen::Rng& rng, int depth) {
    const auto kind = rng.below(depth > 4 ? 4 : 6);
    switch (kind) {
        case 0: return random_string_literal(rng);
        case 1: return random_number(rng);
        case 2: return rng.chance(0.5) ? "true" : (rng.chance(0.5) ? "false" : "null");
        case 3: return random_string_literal(rng);
        case 4: {
            std::string text = "[" + random_whitespace(rng);
            const auto count = rng.below(4);
            for (std::uint64_t i = 0; i < count; ++i) {
                text += (i ? "," : "") + random_whitespace(rng) + random_value(rng, depth + 1) +
                        random_whitespace(rng);
            }
            return text + "]";
        }
        default: {
            std::string text = "{" + random_whitespace(rng);
            const auto count = rng.below(4);
            for (std::uint64_t i = 0; i < count; ++i) {
                text += (i ? "," : "") + random_whitespace(rng) + random_string_literal(rng) +
                        random_whitespace(rng) + ":" + random_whitespace(rng) +
                        random_value(rng, depth + 1) + random_whitespace(rng);
            }
            return text + "}";
        }
    }
}

std::string corrupt(std::string text, queen::Rng& rng) {
    static const std::vector<std::string> junk = {"\"",
                                                  "\\",
                                                  "{",
                                                  "}",
                                                  "[",
                                                  "]",
                                                  ",",
                                                  ":",
                                                  "0",
                                                  "-",
                                                  ".",
                                                  "e",
                                                  "u",
                                                  "x",
                                                  " ",
                                                  "\x01",
                                                  "\x80",
                                                  "\xC0\xAF",
                                                  "\xED\xA0\x80",
                                                  "\xFF",
                                                  "\xE2\x82",
                                                  "\\u12",
                                                  "\\ud800",
                                                  "tru",
                                                  "nul"};
    const auto edits = 1 + rng.below(3);
    for (std::uint64_t e = 0; e < edits; ++e) {
        const auto pos = text.empty() ? 0 : rng.below(text.size() + 1);
        switch (rng.below(3)) {
            case 0:
                if (!text.empty() && pos < text.size()) {
                    text.erase(pos, 1 + rng.below(2));
                }
                break;
            case 1: text.insert(pos, junk[rng.below(junk.size())]); break;
            default:
                if (!text.empty() && pos < text.size()) {
                    text.replace(pos, 1, junk[rng.below(junk.size())]);
                }
        }
    }
    return text;
}

}  // namespace

TEST_CASE("client: json scanner accepts exactly what nlohmann accepts", "[client][json]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    queen::Rng rng{seed};
    int valid_count = 0;
    for (int i = 0; i < 20'000; ++i) {
        std::string text = random_whitespace(rng) + random_value(rng, 0) + random_whitespace(rng);
        if (rng.chance(0.5)) {
            text = corrupt(text, rng);
        }
        INFO("text=" << text);
        const bool expected = json::accept(text);
        REQUIRE(is_valid_json(text) == expected);
        valid_count += expected ? 1 : 0;
    }
    CHECK(valid_count > 5'000);  // the generator produced both kinds in quantity
}

TEST_CASE("client: json scanner decodes strings, members and elements like nlohmann",
          "[client][json]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    queen::Rng rng{seed};
    for (int i = 0; i < 5'000; ++i) {
        const std::string literal = random_string_literal(rng);
        INFO("literal=" << literal);
        std::string decoded;
        REQUIRE(decode_json_string(literal, decoded));
        CHECK(decoded == json::parse(literal).get<std::string>());
    }
    for (int i = 0; i < 2'000; ++i) {
        const std::string object = "{" + random_string_literal(rng) + ":" + random_value(rng, 1) +
                                   "," + random_string_literal(rng) + " : " + random_value(rng, 1) +
                                   "}";
        INFO("object=" << object);
        std::vector<std::pair<std::string, json>> members;
        REQUIRE(for_each_member(object, [&](std::string_view key, std::string_view raw) {
            members.emplace_back(std::string{key}, json::parse(raw));
            return true;
        }));
        REQUIRE(members.size() == 2);
        const json parsed = json::parse(object);
        // nlohmann keeps the last of duplicate keys; compare against that.
        CHECK(parsed[members[1].first] == members[1].second);
        if (members[0].first != members[1].first) {
            CHECK(parsed[members[0].first] == members[0].second);
        }
    }
    std::vector<std::string> elements;
    REQUIRE(for_each_element(R"([1, "a" ,{"x":[2]} ,null])", [&](std::string_view raw) {
        elements.emplace_back(raw);
        return true;
    }));
    CHECK(elements == std::vector<std::string>{"1", "\"a\"", R"({"x":[2]})", "null"});
    CHECK_FALSE(for_each_element("[1,]", [](std::string_view) { return true; }));
    CHECK_FALSE(
        for_each_member(R"({"a" 1})", [](std::string_view, std::string_view) { return true; }));
}

TEST_CASE("client: json scanner rejects numbers that overflow a double, like nlohmann",
          "[client][json]") {
    for (const std::string& number : std::vector<std::string>{
             "1e999", "-1e400", "1e-999", "0.000e999", "0.0001e-330", "123e306", "99e307",
             "1" + std::string(400, '0'), "1" + std::string(200, '0'), "1e99999999999999999999",
             "1e-99999999999999999999", "2.5E+308", "1.7976931348623157e308", "0.01e310"}) {
        INFO("number=" << number);
        CHECK(is_valid_json(number) == json::accept(number));
    }
}

TEST_CASE("client: json scanner bounds nesting depth", "[client][json]") {
    CHECK(is_valid_json(std::string(500, '[') + std::string(500, ']')));
    CHECK_FALSE(is_valid_json(std::string(100'000, '[') + std::string(100'000, ']')));
}

TEST_CASE("json: copy_compact removes only the whitespace between tokens", "[core][json]") {
    const std::uint64_t seed = queen::testing::seed_from_env();
    INFO("QUEEN_SEED=" << seed);
    queen::Rng rng(seed);
    for (int round = 0; round < 5'000; ++round) {
        const std::string text = random_value(rng, 0);
        INFO("text: " << text);
        std::string compact(text.size(), '\0');
        compact.resize(queen::json::scan::copy_compact(text, compact.data()));
        // Same value, no whitespace left outside strings, and compacting again changes nothing.
        CHECK(json::parse(compact) == json::parse(text));
        CHECK(json::parse(compact).dump() == json::parse(text).dump());
        std::string again(compact.size(), '\0');
        again.resize(queen::json::scan::copy_compact(compact, again.data()));
        CHECK(again == compact);
        // has_no_space says yes only where copy_compact has nothing to remove.
        const bool has_space = std::any_of(
            text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) <= 0x20; });
        CHECK(queen::json::scan::has_no_space(text) == !has_space);
        if (queen::json::scan::has_no_space(text)) {
            CHECK(compact == text);
        }
        // A pretty-printed DOM compacts to exactly its compact dump.
        const std::string pretty = json::parse(text).dump(2);
        std::string from_pretty(pretty.size(), '\0');
        from_pretty.resize(queen::json::scan::copy_compact(pretty, from_pretty.data()));
        CHECK(from_pretty == json::parse(text).dump());
    }
}

TEST_CASE("json: skip_value honours a depth limit", "[core][json]") {
    // Arrays and objects count, scalars do not: the api's "JSON nested deeper than N levels".
    std::size_t pos = 0;
    CHECK(queen::json::scan::skip_value("[[1]]", pos, 1, 3));
    pos = 0;
    CHECK(queen::json::scan::skip_value("[[[1]]]", pos, 1, 3));
    pos = 0;
    CHECK(queen::json::scan::skip_value("[[[]]]", pos, 1, 3));
    pos = 0;
    CHECK_FALSE(queen::json::scan::skip_value("[[[[1]]]]", pos, 1, 3));
    pos = 0;
    CHECK_FALSE(queen::json::scan::skip_value("[{\"a\":[{}]}]", pos, 1, 3));
    pos = 0;
    CHECK(queen::json::scan::skip_value("[{\"a\":[1]}]", pos, 1, 3));
}

TEST_CASE("json: append_quoted writes a literal that decodes to the input", "[core][json]") {
    const std::uint64_t seed = queen::testing::seed_from_env();
    INFO("QUEEN_SEED=" << seed);
    queen::Rng rng(seed);
    static const std::vector<std::string> pieces = {"a",
                                                    "plain text ",
                                                    "\"",
                                                    "\\",
                                                    "/",
                                                    "\b",
                                                    "\f",
                                                    "\n",
                                                    "\r",
                                                    "\t",
                                                    std::string(1, '\0'),
                                                    "\x01",
                                                    "\x1f",
                                                    "\x7f",
                                                    "é",
                                                    "日本",
                                                    "\xF0\x9F\x98\x80",
                                                    "0123456789abcdef"};
    for (int round = 0; round < 5'000; ++round) {
        std::string text;
        const auto count = rng.below(12);
        for (std::uint64_t i = 0; i < count; ++i) {
            text += pieces[rng.below(pieces.size())];
        }
        std::string quoted = "prefix:";
        queen::json::scan::append_quoted(quoted, text);
        const std::string literal = quoted.substr(7);
        INFO("literal: " << literal);
        REQUIRE(is_valid_json(literal));
        CHECK(json::parse(literal).get<std::string>() == text);
        std::string decoded;
        CHECK(decode_json_string(literal, decoded));
        CHECK(decoded == text);
    }
}

TEST_CASE("json: strings with one special byte at every offset of a long plain run",
          "[core][json]") {
    // The string scanner skips plain text 16 and 8 bytes at a time; each special piece (quote,
    // escape, control byte, UTF-8, broken UTF-8) must be seen wherever it falls in a step.
    const std::vector<std::string> specials = {
        "\\\"", "\\\\", "\\n", "\\u00e9", "\"",  "\x01", "\x1f", "\x7f", "é", "\xF0\x9F\x98\x80",
        "\xC3", "\xFF", "\\x", "\\ud83d", "\x80"};
    int checked = 0;
    for (const auto& special : specials) {
        for (std::size_t before = 0; before <= 40; ++before) {
            for (const std::size_t after : {std::size_t{0}, std::size_t{3}, std::size_t{17}}) {
                const std::string text = "{\"k\":\"" + std::string(before, 'a') + special +
                                         std::string(after, 'b') + "\",\"n\":1}";
                INFO("text=" << text);
                REQUIRE(is_valid_json(text) == json::accept(text));
                ++checked;
            }
        }
    }
    CHECK(checked == 15 * 41 * 3);
}

namespace {

/// Walks a whole value with the cursor (every key, element and scalar read).
bool walk(queen::json::Cursor& cursor) {
    switch (cursor.peek()) {
        case '{': {
            cursor.enter_object();
            bool is_first = true;
            std::string_view key;
            while (cursor.next_member(key, is_first)) {
                if (!walk(cursor)) {
                    return false;
                }
            }
            return cursor.is_ok();
        }
        case '[': {
            cursor.enter_array();
            bool is_first = true;
            while (cursor.next_element(is_first)) {
                if (!walk(cursor)) {
                    return false;
                }
            }
            return cursor.is_ok();
        }
        default: {
            std::string_view raw;
            bool is_plain = false;
            return cursor.read_raw(raw, is_plain);
        }
    }
}

bool cursor_accepts(std::string_view text, int depth_max) {
    queen::json::Cursor cursor(text, depth_max);
    return walk(cursor) && cursor.is_at_end();
}

bool scanner_accepts(std::string_view text, int depth_max) {
    std::size_t pos = 0;
    queen::json::scan::skip_whitespace(text, pos);
    if (!queen::json::scan::skip_value(text, pos, 1, depth_max)) {
        return false;
    }
    queen::json::scan::skip_whitespace(text, pos);
    return pos == text.size();
}

/// The first byte of text[from, end) that ends a plain run, one byte at a time.
std::size_t plain_end_bytewise(std::string_view text, std::size_t from, bool is_ascii) {
    for (std::size_t i = from; i < text.size(); ++i) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c == '"' || c == '\\' || c < 0x20 || (is_ascii && c >= 0x80)) {
            return i;
        }
    }
    return text.size();
}

}  // namespace

TEST_CASE("json: the cursor accepts what the scanner accepts, at every depth limit",
          "[core][json]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    queen::Rng rng{seed};
    int valid_count = 0;
    for (int i = 0; i < 10'000; ++i) {
        std::string text = random_whitespace(rng) + random_value(rng, 0) + random_whitespace(rng);
        if (rng.chance(0.4)) {
            text = corrupt(text, rng);
        }
        INFO("text=" << text);
        const bool is_valid = is_valid_json(text);
        REQUIRE(cursor_accepts(text, queen::json::json_depth_max) == is_valid);
        valid_count += is_valid ? 1 : 0;
        for (const int depth_max : {1, 2, 3, 4}) {
            INFO("depth_max=" << depth_max);
            REQUIRE(cursor_accepts(text, depth_max) == scanner_accepts(text, depth_max));
        }
    }
    CHECK(valid_count > 4'000);
    // Arrays and objects count towards the depth, scalars do not.
    CHECK(cursor_accepts("[[1]]", 2));
    CHECK_FALSE(cursor_accepts("[[[]]]", 2));
    CHECK(cursor_accepts(R"({"a":{"b":"c"}})", 2));
    CHECK_FALSE(cursor_accepts(R"({"a":{"b":{}}})", 2));
}

TEST_CASE("json: the cursor reads plain strings as they are and flat objects whole",
          "[core][json]") {
    queen::json::Cursor cursor(
        R"({"id":"a-1","k\u0065y":"caf\u00e9","n":{"x":"y","z":12345678901234567890123},"e":"é"})");
    REQUIRE(cursor.enter_object());
    bool is_first = true;
    std::string_view key;
    std::string_view raw;
    bool is_plain = false;
    REQUIRE(cursor.next_member_is(R"("id":)", is_first));
    REQUIRE(cursor.read_raw(raw, is_plain));
    CHECK(raw == R"("a-1")");
    CHECK(is_plain);
    REQUIRE(cursor.next_member(key, is_first));
    CHECK(key == "key");  // decoded
    REQUIRE(cursor.read_raw(raw, is_plain));
    CHECK(raw == R"("caf\u00e9")");
    CHECK_FALSE(is_plain);  // an escape: the caller decodes it
    REQUIRE(cursor.next_member(key, is_first));
    REQUIRE(cursor.read_value(raw));
    CHECK(raw == R"({"x":"y","z":12345678901234567890123})");
    REQUIRE(cursor.next_member(key, is_first));
    REQUIRE(cursor.read_raw(raw, is_plain));
    CHECK_FALSE(is_plain);  // UTF-8: validated by the scanner
    CHECK_FALSE(cursor.next_member(key, is_first));
    CHECK(cursor.is_at_end());
}

TEST_CASE("json: the plain-string loop finds the first special byte at every offset",
          "[core][json]") {
    // The loop reads 16, 8 or 4 bytes at a time and the rest of a run again as the last of
    // them: every length, offset and special byte must give the byte-wise answer.
    const std::string specials = std::string("\"\\\x01\x1f\x7f\x80\xc3\xff") + '\0';
    int checked = 0;
    for (std::size_t length = 0; length <= 40; ++length) {
        for (std::size_t from = 0; from <= std::min<std::size_t>(length, 3); ++from) {
            for (std::size_t at = from; at <= length; ++at) {
                for (const char special : specials) {
                    std::string text(length, 'a');
                    if (at < length) {
                        text[at] = special;
                    }
                    const std::size_t ascii =
                        queen::json::detail::find_plain_end<queen::json::detail::Plain::ascii>(
                            text.data(), text.size(), from);
                    const std::size_t unescaped =
                        queen::json::detail::find_plain_end<queen::json::detail::Plain::unescaped>(
                            text.data(), text.size(), from);
                    INFO("length=" << length << " from=" << from << " at=" << at << " byte="
                                   << static_cast<int>(static_cast<unsigned char>(special)));
                    REQUIRE(ascii == plain_end_bytewise(text, from, true));
                    REQUIRE(unescaped == plain_end_bytewise(text, from, false));
                    ++checked;
                }
            }
        }
    }
    CHECK(checked > 10'000);
}

TEST_CASE("json: the writer writes over a reused buffer and keeps its storage", "[core][json]") {
    std::string buffer;
    buffer.reserve(4096);
    buffer.assign(3000, '#');  // the previous text
    const char* const storage = buffer.data();
    queen::json::Writer writer(std::move(buffer), 1024);
    writer.begin_object().field("a", 1).key("s").literal("x").field("t", "q\"t").end_object();
    std::string text = writer.take();
    CHECK(text == R"({"a":1,"s":"x","t":"q\"t"})");
    CHECK(text.data() == storage);
    // A text longer than the old one grows past it.
    queen::json::Writer longer(std::move(text));
    longer.begin_array();
    for (int i = 0; i < 2000; ++i) {
        longer.number(i);
    }
    longer.end_array();
    const std::string numbers = longer.take();
    CHECK(json::parse(numbers).size() == 2000);
    CHECK(json::parse(numbers)[1999] == 1999);
}
