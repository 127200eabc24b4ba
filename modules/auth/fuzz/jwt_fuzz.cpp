// auth/fuzz/jwt_fuzz.cpp — libFuzzer target `auth_jwt`: Authenticator::authenticate over any
// Authorization header, against a node with an HS256 secret and an RSA key. The first byte picks
// the mode: even, the rest is the header as sent; odd, the rest is "<header JSON>\n<claims JSON>"
// signed here with the right HS256 secret, so the claim checks (exp, nbf, iss, aud, role, roles,
// tenants, sub) run on any JSON. Either way the answer is a grant or an invalid_argument refusal
// in the client-facing words, never a crash; a grant needs a correctly signed HS256 token (the
// fuzzer cannot sign RS256) and names a role and at least one tenant.
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "queen/auth/auth.hpp"
#include "queen/core/assert.hpp"
#include "queen/core/base64url.hpp"

namespace {

using queen::auth::Authenticator;

constexpr std::string_view secret = "fuzz-hs256-secret-0123456789abcdef";
constexpr std::int64_t now_s = 1'800'000'000;

std::string hs256(std::string_view data) {
    std::array<unsigned char, EVP_MAX_MD_SIZE> mac{};
    unsigned int size = 0;
    HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
         reinterpret_cast<const unsigned char*>(data.data()), data.size(), mac.data(), &size);
    return std::string(reinterpret_cast<const char*>(mac.data()), size);
}

const Authenticator& authenticator() {
    static const std::shared_ptr<const Authenticator> instance = [] {
        // An RSA key so RS256 tokens reach the signature check too.
        EVP_PKEY* key = EVP_RSA_gen(2048);
        const auto pem = std::filesystem::temp_directory_path() / "queen_fuzz_auth_jwt.pem";
        FILE* file = std::fopen(pem.c_str(), "w");
        QUEEN_ASSERT(file != nullptr && key != nullptr, "cannot write ", pem.string());
        PEM_write_PUBKEY(file, key);
        std::fclose(file);
        EVP_PKEY_free(key);
        queen::auth::Options options;
        options.is_enabled = true;
        options.jwt_hs256_secret = std::string(secret);
        options.jwt_public_key_file = pem;
        options.jwt_issuer = "issuer";
        options.jwt_audience = "queen";
        auto loaded = Authenticator::load(options);
        QUEEN_ASSERT(loaded.has_value(), "load failed");
        return *loaded;
    }();
    return *instance;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) {
        return 0;
    }
    const std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
    std::string header;
    bool is_signed_here = false;
    if ((data[0] & 1) == 0) {
        header = std::string(rest);
    } else {
        const std::size_t newline = rest.find('\n');
        const std::string_view head = rest.substr(0, newline);
        const std::string_view claims =
            newline == std::string_view::npos ? std::string_view() : rest.substr(newline + 1);
        const std::string signed_part =
            queen::base64url_encode(head) + "." + queen::base64url_encode(claims);
        header = "Bearer " + signed_part + "." + queen::base64url_encode(hs256(signed_part));
        is_signed_here = true;
    }
    const auto result = authenticator().authenticate(header, now_s);
    if (result) {
        QUEEN_ASSERT(is_signed_here || header.find("eyJ") != std::string::npos ||
                         header.find('.') != std::string::npos,
                     "a grant for something that is not a JWT");
        QUEEN_ASSERT(!result->tenants.empty(), "a grant of no tenant");
        QUEEN_ASSERT(
            result->role >= queen::auth::Role::read && result->role <= queen::auth::Role::admin,
            "a grant of no role");
    } else {
        QUEEN_ASSERT(result.error().code == queen::Errc::invalid_argument,
                     "a refusal that is not invalid_argument: ", result.error().message());
        QUEEN_ASSERT(!result.error().context.empty(), "a refusal without words");
    }
    return 0;
}
