// api/src/crypto.hpp — payload encryption at rest: AES-256-GCM (OpenSSL EVP) with a random
// 12-byte nonce per message. Stored form: nonce(12) | ciphertext | tag(16). The same cipher seals
// the payload key a cluster node hands to another (queen/api/sealing.hpp).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "queen/api/api.hpp"
#include "queen/core/bytes.hpp"
#include "queen/core/result.hpp"

namespace queen::api::detail {

inline constexpr std::size_t cipher_key_bytes = 32;
inline constexpr std::size_t cipher_nonce_bytes = 12;
inline constexpr std::size_t cipher_tag_bytes = 16;
inline constexpr std::size_t cipher_overhead_bytes = cipher_nonce_bytes + cipher_tag_bytes;

/// An AES-256-GCM key. Copyable value; the key bytes are wiped on destruction.
/// Thread-safety: const members may run concurrently (each call has its own EVP context).
class PayloadCipher {
public:
    /// Parses 64 hex digits. Errors: Errc::invalid_argument (wrong length or a non-hex digit;
    /// the message never contains the key).
    [[nodiscard]] static Result<PayloadCipher> from_hex(std::string_view hex);
    explicit PayloadCipher(const std::array<std::uint8_t, cipher_key_bytes>& key) noexcept;
    PayloadCipher(const PayloadCipher&) = default;
    PayloadCipher& operator=(const PayloadCipher&) = default;
    ~PayloadCipher();

    /// Encrypts `plaintext` under a fresh nonce from `random`; the tag also authenticates
    /// `associated` (not stored: decrypt() must be given the same bytes). Errors:
    /// Errc::internal when OpenSSL fails (it does not for valid input; reported rather than
    /// asserted).
    [[nodiscard]] Result<Bytes> encrypt(ByteSpan plaintext, RandomSource& random,
                                        ByteSpan associated = {}) const;
    /// Decrypts and authenticates what encrypt() produced with the same `associated` bytes.
    /// Errors: Errc::corruption (too short, or the tag does not match: wrong key, other
    /// associated data or altered bytes), Errc::invalid_argument (over 2 GiB), Errc::internal
    /// (OpenSSL failed).
    [[nodiscard]] Result<Bytes> decrypt(ByteSpan sealed, ByteSpan associated = {}) const;
    /// See api::encryption_key_fingerprint().
    [[nodiscard]] std::string fingerprint() const;

private:
    std::array<std::uint8_t, cipher_key_bytes> key_{};
};

}  // namespace queen::api::detail
