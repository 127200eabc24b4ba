// api/src/object_view.cpp — RawObject: an object's members read again from text the streaming
// reader has validated, answering as a nlohmann DOM of that text would (object_view.hpp).
#include "object_view.hpp"

#include <charconv>
#include <cstdlib>

#include "queen/core/json_cursor.hpp"
#include "queen/core/json_scan.hpp"

namespace queen::api::detail {
namespace {

/// A number token as nlohmann's lexer stores it: an integer token is int64 when negative and it
/// fits, uint64 when not negative and it fits, and otherwise (or with a fraction or an exponent)
/// a double read by strtod.
Number number_of(std::string_view raw) {
    Number out;
    if (raw.empty() || (raw.front() != '-' && (raw.front() < '0' || raw.front() > '9'))) {
        return out;  // not a number
    }
    const char* begin = raw.data();
    const char* end = begin + raw.size();
    if (raw.find_first_of(".eE") == std::string_view::npos) {
        if (raw.front() == '-') {
            std::int64_t value = 0;
            if (const auto read = std::from_chars(begin, end, value);
                read.ec == std::errc{} && read.ptr == end) {
                out.kind = Number::Kind::integer;
                out.integer = value;
                return out;
            }
        } else {
            std::uint64_t value = 0;
            if (const auto read = std::from_chars(begin, end, value);
                read.ec == std::errc{} && read.ptr == end) {
                if (value > static_cast<std::uint64_t>(INT64_MAX)) {
                    out.kind = Number::Kind::above_int64;
                } else {
                    out.kind = Number::Kind::integer;
                    out.integer = static_cast<std::int64_t>(value);
                }
                return out;
            }
        }
    }
    // strtod on a terminated copy: its rounding, overflow (inf) and underflow (0) are the DOM's.
    const std::string text(raw);
    out.kind = Number::Kind::real;
    out.real = std::strtod(text.c_str(), nullptr);
    return out;
}

}  // namespace

void RawObject::start(std::uint32_t depth_max) noexcept {
    members_.clear();
    keys_.clear();
    depth_max_ = depth_max;
    is_object_ = true;
}

void RawObject::add(std::string_view key, std::string_view raw, bool is_plain) {
    members_.push_back(Member{key, raw, is_plain});
}

void RawObject::read(std::string_view text, std::uint32_t depth_max) {
    start(depth_max);
    json::Cursor cursor(text, static_cast<int>(depth_max));
    if (cursor.peek() != '{') {
        is_object_ = false;
        return;
    }
    cursor.enter_object();
    bool is_first = true;
    std::string_view key;
    Member member;
    while (cursor.next_member(key, is_first)) {
        if (key.data() < text.data() || key.data() >= text.data() + text.size()) {
            // Decoded into the cursor's buffer (the key had escapes): kept here.
            key = keys_.emplace_front(key);
        }
        member.key = key;
        if (!cursor.read_raw(member.raw, member.is_plain)) {
            break;  // not reached: the text was validated
        }
        members_.push_back(member);
    }
}

const RawObject::Member* RawObject::find(std::string_view name) const noexcept {
    for (auto it = members_.rbegin(); it != members_.rend(); ++it) {
        if (it->key == name) {
            return &*it;
        }
    }
    return nullptr;
}

bool RawObject::has_value(std::string_view name) const noexcept {
    const Member* found = find(name);
    return found != nullptr && found->raw != "null";
}

bool RawObject::is_string(std::string_view name) const noexcept {
    const Member* found = find(name);
    return found != nullptr && found->raw.front() == '"';
}

Result<std::int64_t> RawObject::integer(std::string_view name, std::int64_t fallback,
                                        std::int64_t min, std::int64_t max) const {
    const Member* found = find(name);
    if (found == nullptr || found->raw == "null") {
        return fallback;
    }
    return checked_integer(name, number_of(found->raw), min, max);
}

Result<bool> RawObject::boolean(std::string_view name, bool fallback) const {
    const Member* found = find(name);
    if (found == nullptr || found->raw == "null") {
        return fallback;
    }
    if (found->raw == "true" || found->raw == "false") {
        return found->raw == "true";
    }
    return Error{Errc::invalid_argument, std::string(name) + " must be a boolean"};
}

Result<std::optional<std::string>> RawObject::string(std::string_view name,
                                                     std::string_view type_error) const {
    const Member* found = find(name);
    if (found == nullptr || found->raw == "null") {
        return std::optional<std::string>{};
    }
    if (found->raw.front() != '"') {
        return Error{Errc::invalid_argument, std::string(type_error)};
    }
    std::string text;
    if (found->is_plain) {
        text.assign(found->raw.substr(1, found->raw.size() - 2));
    } else {
        (void)json::decode_json_string(found->raw, text);  // validated by the walk
    }
    return std::optional<std::string>{std::move(text)};
}

std::string RawObject::json_text(std::string_view name, std::string_view fallback) const {
    const Member* found = find(name);
    if (found == nullptr) {
        return std::string(fallback);
    }
    if (json::scan::has_no_space(found->raw)) {
        return std::string(found->raw);
    }
    std::string out(found->raw.size(), '\0');
    out.resize(json::scan::copy_compact(found->raw, out.data()));
    return out;
}

RawObject RawObject::member(std::string_view name) const {
    RawObject out;
    const Member* found = find(name);
    out.read(found == nullptr ? std::string_view("null") : found->raw, depth_max_);
    return out;
}

}  // namespace queen::api::detail
