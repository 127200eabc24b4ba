// queen/core/crc32c.hpp — CRC-32C (Castagnoli), SSE4.2 instruction when present, table otherwise.
#pragma once

#include <cstdint>

#include "queen/core/bytes.hpp"

namespace queen {

/// CRC-32C of `data`, continuing from `crc` (0 to start). crc32c("123456789") == 0xE3069283.
[[nodiscard]] std::uint32_t crc32c(ByteSpan data, std::uint32_t crc = 0) noexcept;

/// The portable table implementation (exposed so tests can compare it with the hardware path).
[[nodiscard]] std::uint32_t crc32c_portable(ByteSpan data, std::uint32_t crc = 0) noexcept;

/// True when crc32c() uses the CPU instruction.
[[nodiscard]] bool crc32c_is_hardware() noexcept;

}  // namespace queen
