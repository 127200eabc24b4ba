// core/base64url.hpp — base64url (RFC 4648 section 5) without padding, as JWTs use it (RFC 7515
// section 2): the one encoder and decoder.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace queen {

/// `bytes` in base64url, no '=' padding.
[[nodiscard]] inline std::string base64url_encode(std::string_view bytes) {
    static constexpr char digits[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    std::string out;
    out.reserve((bytes.size() * 4 + 2) / 3);
    std::uint32_t buffer = 0;
    int bits = 0;
    for (const char c : bytes) {
        buffer = (buffer << 8) | static_cast<unsigned char>(c);
        bits += 8;
        while (bits >= 6) {
            bits -= 6;
            out.push_back(digits[(buffer >> bits) & 63]);
        }
    }
    if (bits > 0) {
        out.push_back(digits[(buffer << (6 - bits)) & 63]);
    }
    return out;
}

/// The bytes of base64url `text` (trailing '=' padding allowed); nullopt for any other
/// character or a length no encoding has (one character left over).
[[nodiscard]] inline std::optional<std::string> base64url_decode(std::string_view text) {
    while (!text.empty() && text.back() == '=') {
        text.remove_suffix(1);
    }
    std::string out;
    out.reserve(text.size() * 3 / 4 + 3);
    std::uint32_t buffer = 0;
    int bits = 0;
    for (const char c : text) {
        int value = 0;
        if (c >= 'A' && c <= 'Z') {
            value = c - 'A';
        } else if (c >= 'a' && c <= 'z') {
            value = c - 'a' + 26;
        } else if (c >= '0' && c <= '9') {
            value = c - '0' + 52;
        } else if (c == '-') {
            value = 62;
        } else if (c == '_') {
            value = 63;
        } else {
            return std::nullopt;
        }
        buffer = (buffer << 6) | static_cast<std::uint32_t>(value);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out.push_back(static_cast<char>((buffer >> bits) & 0xff));
        }
    }
    if (bits >= 6) {
        return std::nullopt;  // one leftover character cannot encode a byte
    }
    return out;
}

}  // namespace queen
