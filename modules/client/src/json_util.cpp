// client/src/json_util.cpp — JSON helpers of the client (see json_util.hpp).
#include "json_util.hpp"

#include <charconv>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "queen/core/json_scan.hpp"

namespace queen::client::detail {

namespace {

// True when `text` holds no byte that append_quoted escapes: '"', '\\' or a control byte below
// 0x20 (UTF-8 and DEL are copied as they are).
bool has_nothing_to_escape(std::string_view text) noexcept {
    const char* data = text.data();
    const std::size_t size = text.size();
    std::size_t i = 0;
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"');
    const __m128i backslash = _mm_set1_epi8('\\');
    const __m128i control_max = _mm_set1_epi8(0x1f);
    for (; i + 16 <= size; i += 16) {
        const __m128i chunk = _mm_loadu_si128(reinterpret_cast<const __m128i*>(data + i));
        // Unsigned c <= 0x1f exactly when min(c, 0x1f) == c.
        const __m128i control = _mm_cmpeq_epi8(_mm_min_epu8(chunk, control_max), chunk);
        const __m128i special = _mm_or_si128(
            _mm_or_si128(_mm_cmpeq_epi8(chunk, quote), _mm_cmpeq_epi8(chunk, backslash)), control);
        if (_mm_movemask_epi8(special) != 0) {
            return false;
        }
    }
#endif
    for (; i < size; ++i) {
        const auto c = static_cast<unsigned char>(data[i]);
        if (c == '"' || c == '\\' || c < 0x20) {
            return false;
        }
    }
    return true;
}

}  // namespace

void append_json_string(std::string& out, std::string_view text) {
    if (!has_nothing_to_escape(text)) {
        json::scan::append_quoted(out, text);
        return;
    }
    const std::size_t at = out.size();
    out.resize(at + text.size() + 2);
    char* target = out.data() + at;
    target[0] = '"';
    std::memcpy(target + 1, text.data(), text.size());
    target[text.size() + 1] = '"';
}

void append_json_string_or_null(std::string& out, std::string_view text) {
    if (text.empty()) {
        out += "null";
    } else {
        append_json_string(out, text);
    }
}

queen::Result<Json> parse_json(std::string_view body, std::string_view what) {
    try {
        return Json::parse(body.begin(), body.end());
    } catch (const Json::exception& error) {
        return queen::Error{Errc::bad_response,
                            std::string{what} + ": invalid JSON: " + error.what()};
    }
}

std::string text_of(const Json& object, const char* key) {
    if (!object.is_object()) {
        return {};
    }
    const auto found = object.find(key);
    if (found == object.end() || found->is_null()) {
        return {};
    }
    if (found->is_string()) {
        return found->get<std::string>();
    }
    return found->dump();
}

std::string text_of_either(const Json& object, const char* key, const char* other_key) {
    if (object.is_object() && object.contains(key)) {
        return text_of(object, key);
    }
    return text_of(object, other_key);
}

std::int64_t integer_of(const Json& object, const char* key, std::int64_t fallback) {
    if (!object.is_object()) {
        return fallback;
    }
    const auto found = object.find(key);
    if (found == object.end()) {
        return fallback;
    }
    if (found->is_number_integer()) {
        return found->get<std::int64_t>();
    }
    if (found->is_number_unsigned()) {
        return static_cast<std::int64_t>(found->get<std::uint64_t>());
    }
    if (found->is_number_float()) {
        return static_cast<std::int64_t>(found->get<double>());
    }
    if (found->is_string()) {
        const auto& text = found->get_ref<const std::string&>();
        std::int64_t value = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec == std::errc{} && end == text.data() + text.size()) {
            return value;
        }
    }
    return fallback;
}

std::optional<bool> optional_boolean_of(const Json& object, const char* key) {
    if (!object.is_object()) {
        return std::nullopt;
    }
    const auto found = object.find(key);
    if (found == object.end() || found->is_null()) {
        return std::nullopt;
    }
    if (found->is_boolean()) {
        return found->get<bool>();
    }
    if (found->is_number()) {
        return found->get<double>() != 0;
    }
    if (found->is_string()) {
        const auto& text = found->get_ref<const std::string&>();
        return text == "true" || text == "1";
    }
    return false;
}

bool boolean_of(const Json& object, const char* key) {
    return optional_boolean_of(object, key).value_or(false);
}

}  // namespace queen::client::detail
