// modules/core/src/bytes.cpp — hex formatting.
#include "queen/core/bytes.hpp"

namespace queen {
std::string to_hex(ByteSpan bytes) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(bytes.size() * 2);
    for (Byte b : bytes) {
        out.push_back(digits[b >> 4]);
        out.push_back(digits[b & 0xf]);
    }
    return out;
}
}  // namespace queen
