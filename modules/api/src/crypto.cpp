// api/src/crypto.cpp — AES-256-GCM through OpenSSL EVP, and the OpenSSL random source.
#include "crypto.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <pthread.h>

#include <array>
#include <cstring>
#include <memory>

#include "queen/api/sealing.hpp"
#include "queen/core/assert.hpp"
#include "queen/core/hex.hpp"

namespace queen::api {
namespace {

void rand_bytes(std::uint8_t* data, std::size_t size) {
    while (size > 0) {
        const int chunk = size > (1u << 30) ? (1 << 30) : static_cast<int>(size);
        QUEEN_ASSERT(RAND_bytes(data, chunk) == 1,
                     "RAND_bytes failed: no randomness for nonces and ids");
        data += chunk;
        size -= static_cast<std::size_t>(chunk);
    }
}

/// RAND_bytes output drawn ahead, per thread: ids and nonces take 12-16 bytes at a time, and one
/// RAND_bytes call per id (a DRBG lock, a getpid() for fork detection) was 5 % of an I/O
/// thread's time. Bytes handed out are wiped from the buffer.
struct RandomBuffer {
    static constexpr std::size_t size_bytes = 4096;
    std::array<std::uint8_t, size_bytes> bytes{};
    std::size_t available = 0;  // the last `available` bytes are unused
};

thread_local RandomBuffer random_buffer;

/// A forked child must not hand out the bytes its parent will also use: the thread that forked
/// (the only one in the child) drops its buffer.
void forget_random_buffer() {
    OPENSSL_cleanse(random_buffer.bytes.data(), random_buffer.bytes.size());
    random_buffer.available = 0;
}

class OpenSslRandom final : public RandomSource {
public:
    OpenSslRandom() { ::pthread_atfork(nullptr, nullptr, forget_random_buffer); }

    void fill(std::uint8_t* data, std::size_t size) override {
        RandomBuffer& buffer = random_buffer;
        if (size > RandomBuffer::size_bytes / 8) {
            rand_bytes(data, size);
            return;
        }
        if (buffer.available < size) {
            rand_bytes(buffer.bytes.data(), RandomBuffer::size_bytes);
            buffer.available = RandomBuffer::size_bytes;
        }
        std::uint8_t* from = buffer.bytes.data() + RandomBuffer::size_bytes - buffer.available;
        std::memcpy(data, from, size);
        OPENSSL_cleanse(from, size);
        buffer.available -= size;
    }
};

}  // namespace

RandomSource& system_random() {
    static OpenSslRandom random;
    return random;
}

namespace detail {
namespace {

struct ContextDeleter {
    void operator()(EVP_CIPHER_CTX* context) const noexcept { EVP_CIPHER_CTX_free(context); }
};
using ContextPtr = std::unique_ptr<EVP_CIPHER_CTX, ContextDeleter>;

Error openssl_error(const char* step) {
    return Error{Errc::internal, std::string("AES-256-GCM: ") + step + " failed"};
}

}  // namespace

Result<PayloadCipher> PayloadCipher::from_hex(std::string_view hex) {
    if (hex.size() != cipher_key_bytes * 2) {
        return Error{Errc::invalid_argument,
                     "encryption key must be 64 hex digits (32 bytes), got " +
                         std::to_string(hex.size()) + " characters"};
    }
    std::array<std::uint8_t, cipher_key_bytes> key{};
    if (!decode_hex(hex, key)) {
        OPENSSL_cleanse(key.data(), key.size());
        return Error{Errc::invalid_argument, "encryption key must be 64 hex digits"};
    }
    PayloadCipher cipher(key);
    OPENSSL_cleanse(key.data(), key.size());
    return cipher;
}

PayloadCipher::PayloadCipher(const std::array<std::uint8_t, cipher_key_bytes>& key) noexcept
    : key_(key) {}

PayloadCipher::~PayloadCipher() {
    OPENSSL_cleanse(key_.data(), key_.size());
}

Result<Bytes> PayloadCipher::encrypt(ByteSpan plaintext, RandomSource& random,
                                     ByteSpan associated) const {
    if (plaintext.size() > static_cast<std::size_t>(INT32_MAX) - cipher_overhead_bytes ||
        associated.size() > static_cast<std::size_t>(INT32_MAX)) {
        return Error{Errc::invalid_argument, "payload too large to encrypt"};
    }
    Bytes sealed(cipher_nonce_bytes + plaintext.size() + cipher_tag_bytes);
    random.fill(sealed.data(), cipher_nonce_bytes);
    const ContextPtr context(EVP_CIPHER_CTX_new());
    if (!context) {
        return openssl_error("EVP_CIPHER_CTX_new");
    }
    if (EVP_EncryptInit_ex(context.get(), EVP_aes_256_gcm(), nullptr, nullptr, nullptr) != 1 ||
        EVP_CIPHER_CTX_ctrl(context.get(), EVP_CTRL_GCM_SET_IVLEN,
                            static_cast<int>(cipher_nonce_bytes), nullptr) != 1 ||
        EVP_EncryptInit_ex(context.get(), nullptr, nullptr, key_.data(), sealed.data()) != 1) {
        return openssl_error("encrypt init");
    }
    int written = 0;
    if (!associated.empty() &&
        EVP_EncryptUpdate(context.get(), nullptr, &written, associated.data(),
                          static_cast<int>(associated.size())) != 1) {
        return openssl_error("associated data");
    }
    written = 0;
    if (!plaintext.empty() &&
        EVP_EncryptUpdate(context.get(), sealed.data() + cipher_nonce_bytes, &written,
                          plaintext.data(), static_cast<int>(plaintext.size())) != 1) {
        return openssl_error("EVP_EncryptUpdate");
    }
    int final_bytes = 0;
    if (EVP_EncryptFinal_ex(context.get(), sealed.data() + cipher_nonce_bytes + written,
                            &final_bytes) != 1) {
        return openssl_error("EVP_EncryptFinal_ex");
    }
    QUEEN_ASSERT(static_cast<std::size_t>(written + final_bytes) == plaintext.size(),
                 "GCM is a stream mode: ciphertext length equals plaintext length");
    if (EVP_CIPHER_CTX_ctrl(context.get(), EVP_CTRL_GCM_GET_TAG, static_cast<int>(cipher_tag_bytes),
                            sealed.data() + cipher_nonce_bytes + plaintext.size()) != 1) {
        return openssl_error("get tag");
    }
    return sealed;
}

Result<Bytes> PayloadCipher::decrypt(ByteSpan sealed, ByteSpan associated) const {
    if (sealed.size() < cipher_overhead_bytes) {
        return Error{Errc::corruption, "encrypted payload shorter than nonce and tag (" +
                                           std::to_string(sealed.size()) + " bytes)"};
    }
    if (sealed.size() > static_cast<std::size_t>(INT32_MAX) ||
        associated.size() > static_cast<std::size_t>(INT32_MAX)) {
        return Error{Errc::invalid_argument, "encrypted payload too large to decrypt"};
    }
    const std::size_t text_bytes = sealed.size() - cipher_overhead_bytes;
    Bytes plaintext(text_bytes);
    const ContextPtr context(EVP_CIPHER_CTX_new());
    if (!context) {
        return openssl_error("EVP_CIPHER_CTX_new");
    }
    if (EVP_DecryptInit_ex(context.get(), EVP_aes_256_gcm(), nullptr, nullptr, nullptr) != 1 ||
        EVP_CIPHER_CTX_ctrl(context.get(), EVP_CTRL_GCM_SET_IVLEN,
                            static_cast<int>(cipher_nonce_bytes), nullptr) != 1 ||
        EVP_DecryptInit_ex(context.get(), nullptr, nullptr, key_.data(), sealed.data()) != 1) {
        return openssl_error("decrypt init");
    }
    int written = 0;
    if (!associated.empty() &&
        EVP_DecryptUpdate(context.get(), nullptr, &written, associated.data(),
                          static_cast<int>(associated.size())) != 1) {
        return openssl_error("associated data");
    }
    written = 0;
    if (text_bytes > 0 &&
        EVP_DecryptUpdate(context.get(), plaintext.data(), &written,
                          sealed.data() + cipher_nonce_bytes, static_cast<int>(text_bytes)) != 1) {
        return openssl_error("EVP_DecryptUpdate");
    }
    // The tag is an input of the final step; OpenSSL takes a non-const pointer but only reads.
    Bytes tag(sealed.end() - static_cast<std::ptrdiff_t>(cipher_tag_bytes), sealed.end());
    if (EVP_CIPHER_CTX_ctrl(context.get(), EVP_CTRL_GCM_SET_TAG, static_cast<int>(tag.size()),
                            tag.data()) != 1) {
        return openssl_error("set tag");
    }
    int final_bytes = 0;
    if (EVP_DecryptFinal_ex(context.get(), plaintext.data() + written, &final_bytes) != 1) {
        return Error{Errc::corruption,
                     "encrypted payload failed authentication (wrong key or altered data)"};
    }
    QUEEN_ASSERT(static_cast<std::size_t>(written + final_bytes) == text_bytes,
                 "GCM plaintext length equals ciphertext length");
    return plaintext;
}

std::string PayloadCipher::fingerprint() const {
    std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
    unsigned int digest_bytes = 0;
    QUEEN_ASSERT(EVP_Digest(key_.data(), key_.size(), digest.data(), &digest_bytes, EVP_sha256(),
                            nullptr) == 1 &&
                     digest_bytes == 32,
                 "SHA-256 of 32 bytes cannot fail");
    static constexpr char digits[] = "0123456789abcdef";
    std::string hex;
    for (std::size_t i = 0; i < 8; ++i) {
        hex += digits[digest[i] >> 4];
        hex += digits[digest[i] & 0xf];
    }
    return hex;
}

}  // namespace detail

Result<std::string> encryption_key_fingerprint(std::string_view key_hex) {
    QUEEN_TRY(auto cipher, detail::PayloadCipher::from_hex(key_hex));
    return cipher.fingerprint();
}

SealingKey SealingKey::derive(std::string_view secret, std::string_view label) {
    SealingKey key;
    unsigned int size = 0;
    const auto* digest = HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
                              reinterpret_cast<const unsigned char*>(label.data()), label.size(),
                              key.key_.data(), &size);
    QUEEN_ASSERT(digest != nullptr && size == key.key_.size(), "HMAC-SHA256 failed");
    return key;
}

SealingKey::~SealingKey() {
    OPENSSL_cleanse(key_.data(), key_.size());
}

Result<Bytes> SealingKey::seal(ByteSpan plaintext, ByteSpan associated,
                               RandomSource& random) const {
    return detail::PayloadCipher(key_).encrypt(plaintext, random, associated);
}

Result<Bytes> SealingKey::open(ByteSpan sealed, ByteSpan associated) const {
    return detail::PayloadCipher(key_).decrypt(sealed, associated);
}
}  // namespace queen::api
