// queen/api/sealing.hpp — the API's AES-256-GCM (the payload cipher) for sealing things other
// than payloads, under a key derived from a shared secret: how a cluster node hands the payload
// key to another (node/src/key_exchange.hpp).
//
//     const auto key = api::SealingKey::derive(cluster_secret, "queen payload key wrap v1");
//     QUEEN_TRY(Bytes sealed, key.seal(secret_bytes, header, api::system_random()));
//     QUEEN_TRY(Bytes opened, key.open(sealed, header));  // Errc::corruption if anything differs
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "queen/api/api.hpp"
#include "queen/core/bytes.hpp"
#include "queen/core/result.hpp"

namespace queen::api {

/// Bytes seal() adds to the plaintext: a 12-byte nonce before it and a 16-byte tag after it.
inline constexpr std::size_t sealed_overhead_bytes = 28;

/// A 32-byte AES-256-GCM key derived from a secret. Copyable value; the key bytes are wiped on
/// destruction. Thread-safety: const members may run concurrently.
class SealingKey {
public:
    /// HMAC-SHA256(secret, label): different labels give independent keys from one secret.
    [[nodiscard]] static SealingKey derive(std::string_view secret, std::string_view label);
    SealingKey(const SealingKey&) = default;
    SealingKey& operator=(const SealingKey&) = default;
    ~SealingKey();

    /// nonce(12, from `random`) | ciphertext | tag(16); the tag also covers `associated`, which
    /// is not included: open() must be given the same bytes.
    /// Errors: Errc::invalid_argument (over 2 GiB), Errc::internal (OpenSSL failed).
    [[nodiscard]] Result<Bytes> seal(ByteSpan plaintext, ByteSpan associated,
                                     RandomSource& random) const;
    /// The plaintext of what seal() made under the same key with the same `associated` bytes.
    /// Errors: Errc::corruption (too short, or authentication failed: another key, other
    /// associated data or altered bytes), Errc::internal (OpenSSL failed).
    [[nodiscard]] Result<Bytes> open(ByteSpan sealed, ByteSpan associated) const;

private:
    SealingKey() = default;
    std::array<std::uint8_t, 32> key_{};
};

}  // namespace queen::api
