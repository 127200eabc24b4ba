// modules/http/src/uri.cpp — percent-decoding and -encoding of paths and query strings.
#include "queen/http/uri.hpp"

#include <algorithm>

#include "queen/core/hex.hpp"

namespace queen::http {
namespace {

bool is_unreserved(unsigned char c) noexcept {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~';
}

}  // namespace

Result<std::string> percent_decode(std::string_view text, bool plus_is_space) {
    if (text.find('%') == std::string_view::npos &&
        (!plus_is_space || text.find('+') == std::string_view::npos)) {
        return std::string(text);  // the usual segment: nothing to decode
    }
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '%') {
            if (text.size() - i < 3) {
                return Error{Errc::invalid_argument, "truncated percent-escape"};
            }
            const int high = hex_value(text[i + 1]);
            const int low = hex_value(text[i + 2]);
            if (high < 0 || low < 0) {
                return Error{Errc::invalid_argument,
                             "bad percent-escape '%" + std::string(text.substr(i + 1, 2)) + "'"};
            }
            const int value = high * 16 + low;
            if (value == 0) {
                return Error{Errc::invalid_argument, "percent-escape %00 (NUL) is not allowed"};
            }
            out.push_back(static_cast<char>(value));
            i += 2;
        } else if (c == '+' && plus_is_space) {
            out.push_back(' ');
        } else {
            out.push_back(c);
        }
    }
    return out;
}

std::string percent_encode(std::string_view text) {
    static constexpr char digits[] = "0123456789ABCDEF";
    std::string out;
    out.reserve(text.size());
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if (is_unreserved(byte)) {
            out.push_back(c);
        } else {
            out.push_back('%');
            out.push_back(digits[byte >> 4]);
            out.push_back(digits[byte & 0x0f]);
        }
    }
    return out;
}

Result<std::vector<std::string>> decode_path(std::string_view raw_path) {
    std::vector<std::string> segments;
    segments.reserve(static_cast<std::size_t>(std::count(raw_path.begin(), raw_path.end(), '/')) +
                     1);
    std::size_t start = 0;
    while (start <= raw_path.size()) {
        std::size_t end = raw_path.find('/', start);
        if (end == std::string_view::npos) {
            end = raw_path.size();
        }
        const std::string_view piece = raw_path.substr(start, end - start);
        if (!piece.empty()) {
            auto decoded = percent_decode(piece, false);
            if (!decoded) {
                return Error{Errc::invalid_argument, "path segment '" + std::string(piece) +
                                                         "': " + decoded.error().context};
            }
            segments.push_back(std::move(decoded).value());
        }
        start = end + 1;
    }
    return segments;
}

Result<std::vector<std::pair<std::string, std::string>>> decode_query(std::string_view raw_query) {
    std::vector<std::pair<std::string, std::string>> out;
    if (raw_query.empty()) {
        return out;
    }
    out.reserve(static_cast<std::size_t>(std::count(raw_query.begin(), raw_query.end(), '&')) + 1);
    std::size_t start = 0;
    while (start <= raw_query.size()) {
        std::size_t end = raw_query.find('&', start);
        if (end == std::string_view::npos) {
            end = raw_query.size();
        }
        const std::string_view piece = raw_query.substr(start, end - start);
        if (!piece.empty()) {
            const std::size_t equals = piece.find('=');
            const std::string_view raw_key = piece.substr(0, equals);
            const std::string_view raw_value =
                equals == std::string_view::npos ? std::string_view{} : piece.substr(equals + 1);
            auto key = percent_decode(raw_key, true);
            auto value = percent_decode(raw_value, true);
            if (!key || !value) {
                const Error& error = !key ? key.error() : value.error();
                return Error{Errc::invalid_argument,
                             "query parameter '" + std::string(piece) + "': " + error.context};
            }
            out.emplace_back(std::move(key).value(), std::move(value).value());
        }
        start = end + 1;
    }
    return out;
}

}  // namespace queen::http
