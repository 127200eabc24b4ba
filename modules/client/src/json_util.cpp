// client/src/json_util.cpp — JSON helpers of the client (see json_util.hpp).
#include "json_util.hpp"

#include <charconv>

namespace queen::client::detail {

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
