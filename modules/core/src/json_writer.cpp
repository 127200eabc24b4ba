// core/src/json_writer.cpp — the out-of-line parts of json::Writer (see json_writer.hpp).
#include "queen/core/json_writer.hpp"

#include <cmath>

#include "queen/core/iso_time.hpp"

namespace queen::json {

void Writer::expand(std::size_t size) {
    const std::size_t needed = used_ + size;
    std::size_t target = std::max({needed, out_.size() * 2, std::size_t{256}});
    if (needed <= out_.capacity()) {
        target = std::min(target, out_.capacity());  // no new storage while the old one lasts
    }
    out_.resize(target);
}

void Writer::misplaced_key() const {
    QUEEN_ASSERT(!after_key_, "json::Writer: two keys in a row");
    QUEEN_ASSERT(depth_ > 0, "json::Writer: a key outside an object");
    QUEEN_ASSERT(false, "json::Writer::misplaced_key called for a key in its place");
}

Writer& Writer::text_key(std::string_view name) {
    QUEEN_ASSERT(!after_key_, "json::Writer: two keys in a row");
    QUEEN_ASSERT(depth_ > 0, "json::Writer: a key outside an object");
    prefix();
    if (is_plain(name)) {
        char* at = grow(name.size() + 3);
        at[0] = '"';
        std::memcpy(at + 1, name.data(), name.size());
        at[name.size() + 1] = '"';
        at[name.size() + 2] = ':';
    } else {
        write_escaped(name);
        *grow(1) = ':';
    }
    after_key_ = true;
    return *this;
}

void Writer::write_escaped(std::string_view text) {
    // At most 6 bytes per input byte (\u00XX) and the quotes; the rest is given back.
    const std::size_t room = text.size() * 6 + 2;
    char* const begin = grow(room);
    char* const end = detail::write_quoted(begin, text);
    used_ -= room - static_cast<std::size_t>(end - begin);
}

void Writer::too_deep() const {
    QUEEN_ASSERT(false, "json::Writer: nested deeper than ", depth_max);
}

void Writer::unbalanced(char bracket) const {
    QUEEN_ASSERT(false, "json::Writer: unbalanced ", bracket);
}

Writer& Writer::iso_time(std::int64_t ms, bool microseconds) {
    prefix();
    // "YYYY-MM-DDTHH:MM:SS." + 3 digits (+ "000") + 'Z' for years 0-9999 (and -999 to -1).
    const std::size_t length = microseconds ? 27 : 24;
    const std::int64_t second = floor_div(ms, 1000);
    if (second != iso_second_) {
        std::array<char, iso_time_bytes_max> buffer{};
        const std::size_t written = write_iso_time(buffer.data(), ms, microseconds);
        if (written != length) {  // a year of 5 digits: another layout, not cached
            char* at = grow(written + 2);
            at[0] = '"';
            std::memcpy(at + 1, buffer.data(), written);  // digits and -:.TZ: nothing to escape
            at[written + 1] = '"';
            return *this;
        }
        std::memcpy(iso_prefix_.data(), buffer.data(), iso_prefix_.size());
        iso_second_ = second;
    }
    const auto millis = static_cast<int>(ms - second * 1000);
    char* at = grow(length + 2);
    at[0] = '"';
    std::memcpy(at + 1, iso_prefix_.data(), iso_prefix_.size());
    at[21] = static_cast<char>('0' + millis / 100);
    at[22] = static_cast<char>('0' + millis / 10 % 10);
    at[23] = static_cast<char>('0' + millis % 10);
    if (microseconds) {
        at[24] = '0';
        at[25] = '0';
        at[26] = '0';
    }
    at[length] = 'Z';
    at[length + 1] = '"';
    return *this;
}

Writer& Writer::number(double value) {
    prefix();
    if (!std::isfinite(value)) {
        append("null");
        return *this;
    }
    std::array<char, 64> buffer{};
    const auto [end, error] = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
    QUEEN_ASSERT(error == std::errc{}, "to_chars(double) failed");
    append(std::string_view(buffer.data(), static_cast<std::size_t>(end - buffer.data())));
    return *this;
}

std::string Writer::take() {
    QUEEN_ASSERT(depth_ == 0 && !after_key_, "json::Writer: unclosed containers");
    out_.resize(used_);
    used_ = 0;
    return std::move(out_);
}

}  // namespace queen::json
