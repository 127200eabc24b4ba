// modules/core/src/crc32c.cpp — CRC-32C: SSE4.2 crc32 instruction when the CPU has it, slicing
// table otherwise.
#include "queen/core/crc32c.hpp"

#include <array>

#if defined(__x86_64__)
#include <cpuid.h>
#include <nmmintrin.h>
#include <cstring>
#endif

namespace queen {
namespace {
constexpr std::uint32_t polynomial_reflected = 0x82F63B78u;

constexpr std::array<std::array<std::uint32_t, 256>, 8> make_tables() {
    std::array<std::array<std::uint32_t, 256>, 8> tables{};
    for (std::uint32_t i = 0; i < 256; ++i) {
        std::uint32_t crc = i;
        for (int bit = 0; bit < 8; ++bit) {
            crc = (crc >> 1) ^ ((crc & 1u) ? polynomial_reflected : 0u);
        }
        tables[0][i] = crc;
    }
    for (std::size_t t = 1; t < 8; ++t) {
        for (std::uint32_t i = 0; i < 256; ++i) {
            tables[t][i] = (tables[t - 1][i] >> 8) ^ tables[0][tables[t - 1][i] & 0xff];
        }
    }
    return tables;
}
constexpr auto tables = make_tables();

std::uint32_t portable_raw(const Byte* p, std::size_t n, std::uint32_t crc) noexcept {
    while (n >= 8) {
        const std::uint32_t low = load_le<std::uint32_t>(p) ^ crc;
        const std::uint32_t high = load_le<std::uint32_t>(p + 4);
        crc = tables[7][low & 0xff] ^ tables[6][(low >> 8) & 0xff] ^ tables[5][(low >> 16) & 0xff] ^
              tables[4][low >> 24] ^ tables[3][high & 0xff] ^ tables[2][(high >> 8) & 0xff] ^
              tables[1][(high >> 16) & 0xff] ^ tables[0][high >> 24];
        p += 8;
        n -= 8;
    }
    while (n-- > 0) {
        crc = (crc >> 8) ^ tables[0][(crc ^ *p++) & 0xff];
    }
    return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) std::uint32_t hardware_raw(const Byte* p, std::size_t n,
                                                             std::uint32_t crc) noexcept {
    std::uint64_t crc64 = crc;
    while (n >= 8) {
        std::uint64_t word = 0;  // x86 is little-endian; load_le's byte loop is not folded here
        std::memcpy(&word, p, sizeof word);
        crc64 = _mm_crc32_u64(crc64, word);
        p += 8;
        n -= 8;
    }
    auto crc32 = static_cast<std::uint32_t>(crc64);
    while (n-- > 0) {
        crc32 = _mm_crc32_u8(crc32, *p++);
    }
    return crc32;
}

bool detect_sse42() noexcept {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) {
        return false;
    }
    return (ecx & bit_SSE4_2) != 0;
}
const bool has_sse42 = detect_sse42();
#else
const bool has_sse42 = false;
#endif
}  // namespace

std::uint32_t crc32c_portable(ByteSpan data, std::uint32_t crc) noexcept {
    return ~portable_raw(data.data(), data.size(), ~crc);
}

std::uint32_t crc32c(ByteSpan data, std::uint32_t crc) noexcept {
#if defined(__x86_64__)
    if (has_sse42) {
        return ~hardware_raw(data.data(), data.size(), ~crc);
    }
#endif
    return crc32c_portable(data, crc);
}

bool crc32c_is_hardware() noexcept {
    return has_sse42;
}

}  // namespace queen
