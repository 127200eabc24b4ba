// api/tests/crypto_test.cpp — AES-256-GCM payload cipher: round trip, nonces, tampering, keys.
#include "crypto.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "harness.hpp"
#include "queen/api/sealing.hpp"

namespace queen::api::detail {
namespace {

const char* const key_hex = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

TEST_CASE("api: AES-256-GCM round-trips and authenticates", "[api][crypto]") {
    const std::uint64_t seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    testing::SeededRandom random(seed);
    auto cipher = PayloadCipher::from_hex(key_hex);
    REQUIRE(cipher.has_value());
    Rng rng(seed);
    for (int i = 0; i < 200; ++i) {
        Bytes plain(rng.below(2000));
        for (auto& byte : plain) {
            byte = static_cast<Byte>(rng.next());
        }
        auto sealed = cipher->encrypt(plain, random);
        REQUIRE(sealed.has_value());
        REQUIRE(sealed->size() == plain.size() + cipher_overhead_bytes);
        auto opened = cipher->decrypt(*sealed);
        REQUIRE(opened.has_value());
        REQUIRE(*opened == plain);
        // Any flipped bit is detected.
        Bytes tampered = *sealed;
        tampered[rng.below(tampered.size())] ^= static_cast<Byte>(1u << rng.below(8));
        auto rejected = cipher->decrypt(tampered);
        REQUIRE_FALSE(rejected.has_value());
        REQUIRE(rejected.error().is(Errc::corruption));
    }
    const Bytes text{'h', 'i'};
    CHECK(cipher->encrypt(text, random).value() != cipher->encrypt(text, random).value());
    CHECK(cipher->decrypt(Bytes(10)).error().is(Errc::corruption));

    auto other =
        PayloadCipher::from_hex("ff0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f");
    REQUIRE(other.has_value());
    CHECK_FALSE(other->decrypt(cipher->encrypt(text, random).value()).has_value());
}

TEST_CASE("api: associated data is authenticated, not stored", "[api][crypto]") {
    testing::SeededRandom random(queen::testing::seed_from_env());
    auto cipher = PayloadCipher::from_hex(key_hex);
    REQUIRE(cipher.has_value());
    const Bytes text{'k', 'e', 'y'};
    const Bytes header{1, 2, 3};
    auto sealed = cipher->encrypt(text, random, header);
    REQUIRE(sealed.has_value());
    CHECK(sealed->size() == text.size() + cipher_overhead_bytes);
    CHECK(cipher->decrypt(*sealed, header).value() == text);
    CHECK(cipher->decrypt(*sealed).error().is(Errc::corruption));
    CHECK(cipher->decrypt(*sealed, Bytes{1, 2, 4}).error().is(Errc::corruption));
    // Payloads sealed without associated data open as before.
    CHECK(cipher->decrypt(cipher->encrypt(text, random).value()).value() == text);
}

TEST_CASE("api: a sealing key derived from a secret seals under its label only", "[api][crypto]") {
    testing::SeededRandom random(queen::testing::seed_from_env());
    const auto key = SealingKey::derive("a cluster secret of some length", "label one");
    const Bytes text(32, 7);
    const Bytes header{9};
    auto sealed = key.seal(text, header, random);
    REQUIRE(sealed.has_value());
    CHECK(sealed->size() == text.size() + sealed_overhead_bytes);
    CHECK(key.open(*sealed, header).value() == text);
    // The same secret and label give the same key (another node derives it too).
    CHECK(SealingKey::derive("a cluster secret of some length", "label one")
              .open(*sealed, header)
              .value() == text);
    CHECK(SealingKey::derive("a cluster secret of some length", "label two")
              .open(*sealed, header)
              .error()
              .is(Errc::corruption));
    CHECK(SealingKey::derive("another cluster secret, as long", "label one")
              .open(*sealed, header)
              .error()
              .is(Errc::corruption));
}

TEST_CASE("api: encryption keys must be 64 hex digits", "[api][crypto]") {
    CHECK(PayloadCipher::from_hex(key_hex).has_value());
    CHECK(
        PayloadCipher::from_hex("000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F")
            .has_value());
    CHECK_FALSE(PayloadCipher::from_hex("").has_value());
    CHECK_FALSE(PayloadCipher::from_hex("00").has_value());
    const auto bad =
        PayloadCipher::from_hex("zz0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f");
    REQUIRE_FALSE(bad.has_value());
    CHECK(bad.error().context.find("zz") == std::string::npos);  // never echo key material
    ApiOptions options;
    options.encryption_key_hex = "abc";
    CHECK_FALSE(options.validate().has_value());
    options.encryption_key_hex = key_hex;
    CHECK(options.validate().has_value());
}

TEST_CASE("api: a key's fingerprint is the start of its SHA-256, and never the key",
          "[api][crypto]") {
    // python3 -c 'import hashlib; print(hashlib.sha256(bytes(range(32))).hexdigest()[:16])'
    CHECK(encryption_key_fingerprint(key_hex).value() == "630dcd2966c43366");
    CHECK(encryption_key_fingerprint(
              "000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F")
              .value() == "630dcd2966c43366");
    CHECK(encryption_key_fingerprint(
              "ff0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f")
              .value() != "630dcd2966c43366");
    const auto bad = encryption_key_fingerprint("abc");
    REQUIRE_FALSE(bad.has_value());
    CHECK(bad.error().is(Errc::invalid_argument));
}

TEST_CASE("api: options validation names the field", "[api][options]") {
    CHECK(ApiOptions{}.validate().has_value());
    ApiOptions options;
    options.pop_batch_default = 0;
    CHECK_THAT(options.validate().error().context, Catch::Contains("pop_batch_default"));
    options = ApiOptions{};
    options.pop_subscription_mode_default = "sometimes";
    CHECK_THAT(options.validate().error().context,
               Catch::Contains("pop_subscription_mode_default"));
    options = ApiOptions{};
    options.default_tenant = "has space";
    CHECK_THAT(options.validate().error().context, Catch::Contains("default_tenant"));
    options = ApiOptions{};
    options.pop_timeout_ms_default = options.pop_timeout_ms_max + 1;
    CHECK_FALSE(options.validate().has_value());
}

TEST_CASE("api: the system random source never repeats bytes, across threads and sizes",
          "[api][crypto]") {
    // It hands out RAND_bytes output drawn ahead per thread: no draw may reuse a byte.
    RandomSource& random = system_random();
    std::set<std::array<std::uint8_t, 16>> seen;
    std::mutex mutex;
    std::size_t draws = 0;
    const auto draw_many = [&] {
        for (int i = 0; i < 2'000; ++i) {
            std::array<std::uint8_t, 16> id{};
            random.fill(id.data(), id.size());
            std::array<std::uint8_t, 12> nonce{};
            random.fill(nonce.data(), nonce.size());
            std::array<std::uint8_t, 16> wide{};
            std::memcpy(wide.data(), nonce.data(), nonce.size());
            std::lock_guard lock(mutex);
            seen.insert(id);
            seen.insert(wide);
            draws += 2;
        }
    };
    std::thread other(draw_many);
    draw_many();
    other.join();
    CHECK(seen.size() == draws);
    // Draws larger than the per-thread buffer come straight from RAND_bytes.
    std::vector<std::uint8_t> big(100'000, 0);
    random.fill(big.data(), big.size());
    CHECK(std::count(big.begin(), big.end(), std::uint8_t{0}) < 1'000);
}

}  // namespace
}  // namespace queen::api::detail
