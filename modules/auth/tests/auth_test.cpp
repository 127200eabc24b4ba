// auth/tests/auth_test.cpp — static tokens, HS256 and RS256 (PEM and JWKS) tokens made here with
// OpenSSL, each check of authenticate() and the refusals of load().
#include "queen/auth/auth.hpp"

#include <openssl/bio.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <sys/stat.h>

#include <array>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "queen/core/base64url.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/support.hpp"

namespace queen::auth {
namespace {

using nlohmann::json;

constexpr std::int64_t now_s = 1'800'000'000;
const std::string secret = "0123456789abcdef0123456789abcdef-hs256";

struct PkeyFree {
    void operator()(EVP_PKEY* key) const noexcept { EVP_PKEY_free(key); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;

Pkey rsa_key(unsigned bits = 2048) {
    Pkey key(EVP_RSA_gen(bits));
    REQUIRE(key != nullptr);
    return key;
}

std::string pem_of(EVP_PKEY* key) {
    BIO* bio = BIO_new(BIO_s_mem());
    REQUIRE(PEM_write_bio_PUBKEY(bio, key) == 1);
    char* data = nullptr;
    const long size = BIO_get_mem_data(bio, &data);
    std::string out(data, static_cast<std::size_t>(size));
    BIO_free(bio);
    return out;
}

std::string bn_param(EVP_PKEY* key, const char* name) {
    BIGNUM* bn = nullptr;
    REQUIRE(EVP_PKEY_get_bn_param(key, name, &bn) == 1);
    std::string out(static_cast<std::size_t>(BN_num_bytes(bn)), '\0');
    BN_bn2bin(bn, reinterpret_cast<unsigned char*>(out.data()));
    BN_free(bn);
    return base64url_encode(out);
}

json jwk_of(EVP_PKEY* key, const std::string& kid) {
    return {{"kty", "RSA"},
            {"kid", kid},
            {"use", "sig"},
            {"n", bn_param(key, OSSL_PKEY_PARAM_RSA_N)},
            {"e", bn_param(key, OSSL_PKEY_PARAM_RSA_E)}};
}

std::string sign_hs256(const std::string& key, const std::string& data) {
    std::array<unsigned char, EVP_MAX_MD_SIZE> mac{};
    unsigned int size = 0;
    HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
         reinterpret_cast<const unsigned char*>(data.data()), data.size(), mac.data(), &size);
    return std::string(reinterpret_cast<const char*>(mac.data()), size);
}

std::string sign_rs256(EVP_PKEY* key, const std::string& data) {
    EVP_MD_CTX* context = EVP_MD_CTX_new();
    REQUIRE(EVP_DigestSignInit(context, nullptr, EVP_sha256(), nullptr, key) == 1);
    std::size_t size = 0;
    REQUIRE(EVP_DigestSign(context, nullptr, &size,
                           reinterpret_cast<const unsigned char*>(data.data()), data.size()) == 1);
    std::string out(size, '\0');
    REQUIRE(EVP_DigestSign(context, reinterpret_cast<unsigned char*>(out.data()), &size,
                           reinterpret_cast<const unsigned char*>(data.data()), data.size()) == 1);
    EVP_MD_CTX_free(context);
    out.resize(size);
    return out;
}

/// A JWT of `header` and `claims`, signed with HS256 `key` or RS256 `rsa` as the header says.
std::string jwt(const json& header, const json& claims, const std::string& key = secret,
                EVP_PKEY* rsa = nullptr) {
    const std::string data =
        base64url_encode(header.dump()) + "." + base64url_encode(claims.dump());
    const std::string alg = header.value("alg", "");
    std::string signature;
    if (alg == "HS256") {
        signature = sign_hs256(key, data);
    } else if (alg == "RS256") {
        signature = sign_rs256(rsa, data);
    }
    return data + "." + base64url_encode(signature);
}

json claims(json extra = json::object()) {
    json out = {{"sub", "alice"}, {"role", "write"}, {"exp", now_s + 3600}};
    for (auto& [key, value] : extra.items()) {
        out[key] = value;
    }
    return out;
}

std::filesystem::path write_file(const testing::TempDir& dir, const std::string& name,
                                 const std::string& text, mode_t mode = 0600) {
    const auto path = dir.path() / name;
    std::ofstream(path) << text;
    ::chmod(path.c_str(), mode);
    return path;
}

std::shared_ptr<const Authenticator> load(const Options& options) {
    auto loaded = Authenticator::load(options);
    INFO((loaded ? std::string() : loaded.error().message()));
    REQUIRE(loaded.has_value());
    return *loaded;
}

std::string refusal(const Authenticator& authenticator, std::string_view header) {
    const auto result = authenticator.authenticate(header, now_s);
    REQUIRE_FALSE(result.has_value());
    CHECK(result.error().code == Errc::invalid_argument);
    return result.error().context;
}

TEST_CASE("auth: roles are cumulative and grants cover their tenants", "[auth]") {
    CHECK(parse_role("read-only") == Role::read);
    CHECK(parse_role("read-write") == Role::write);
    CHECK(parse_role("admin") == Role::admin);
    CHECK_FALSE(parse_role("root").has_value());
    Grant grant{Role::write, {"default", "orders"}, "x"};
    CHECK(grant.allows("orders", Role::read));
    CHECK(grant.allows("orders", Role::write));
    CHECK_FALSE(grant.allows("orders", Role::admin));
    CHECK_FALSE(grant.allows("billing", Role::read));
    CHECK_FALSE(grant.covers("*"));
    Grant all{Role::admin, {"*"}, "root"};
    CHECK(all.allows("anything", Role::admin));
    CHECK(all.covers("*"));
}

TEST_CASE("auth: static tokens from a private file", "[auth]") {
    testing::TempDir dir;
    Options options;
    options.is_enabled = true;
    options.tokens_file = write_file(dir, "tokens",
                                     "# name role tenants token\n"
                                     "ci write default,orders tok-0123456789abcdef\n"
                                     "\n"
                                     "ops admin * tok-fedcba9876543210  # everything\n");
    const auto authenticator = load(options);
    CHECK(authenticator->static_token_count() == 2);
    auto grant = authenticator->authenticate("Bearer tok-0123456789abcdef", now_s);
    REQUIRE(grant.has_value());
    CHECK(grant->role == Role::write);
    CHECK(grant->subject == "ci");
    CHECK(grant->tenants == std::vector<std::string>{"default", "orders"});
    // The prefix is case-insensitive, and a header without it is the token itself.
    CHECK(authenticator->authenticate("bearer  tok-fedcba9876543210", now_s)->role == Role::admin);
    CHECK(authenticator->authenticate("tok-fedcba9876543210", now_s)->subject == "ops");
    CHECK(refusal(*authenticator, "Bearer tok-0123456789abcdeX") == "Invalid token");
    CHECK(refusal(*authenticator, "") == "Authentication required");
    CHECK(refusal(*authenticator, "Bearer ") == "Authentication required");

    SECTION("a file others can read is refused") {
        options.tokens_file =
            write_file(dir, "open", "ci write default tok-0123456789abcdef\n", 0644);
        const auto loaded = Authenticator::load(options);
        REQUIRE_FALSE(loaded.has_value());
        CHECK_THAT(loaded.error().message(), Catch::Contains("chmod 600"));
    }
    SECTION("malformed lines name their line") {
        for (const auto& [text, words] : std::vector<std::pair<std::string, std::string>>{
                 {"a write default\n", ":1: expected"},
                 {"\na root default tok-0123456789abcdef\n", ":2: role must be"},
                 {"a read default short\n", "at least 16"},
                 {"a read default, tok-0123456789abcdef\n", "empty tenant"},
                 {"a read x tok-0123456789abcdef\nb read y tok-0123456789abcdef\n", "same token"},
             }) {
            options.tokens_file = write_file(dir, "bad", text);
            const auto loaded = Authenticator::load(options);
            INFO(text);
            REQUIRE_FALSE(loaded.has_value());
            CHECK_THAT(loaded.error().message(), Catch::Contains(words));
        }
    }
}

TEST_CASE("auth: HS256 tokens and every claim check", "[auth]") {
    Options options;
    options.is_enabled = true;
    options.jwt_hs256_secret = secret;
    options.jwt_issuer = "https://issuer.example";
    options.jwt_audience = "queen";
    const auto authenticator = load(options);
    const json header = {{"alg", "HS256"}, {"typ", "JWT"}};
    const json good =
        claims({{"iss", "https://issuer.example"}, {"aud", json::array({"x", "queen"})}});

    const auto grant = authenticator->authenticate("Bearer " + jwt(header, good), now_s);
    REQUIRE(grant.has_value());
    CHECK(grant->role == Role::write);
    CHECK(grant->subject == "alice");
    CHECK(grant->tenants == std::vector<std::string>{"default"});  // no tenants claim

    const auto with = [&](json extra) {
        json c = good;
        for (auto& [key, value] : extra.items()) {
            if (value.is_null()) {
                c.erase(key);
            } else {
                c[key] = value;
            }
        }
        return "Bearer " + jwt(header, c);
    };
    CHECK(refusal(*authenticator, with({{"exp", now_s - 31}})) == "Token has expired");
    CHECK(authenticator->authenticate(with({{"exp", now_s - 29}}), now_s).has_value());  // skew
    CHECK(refusal(*authenticator, with({{"nbf", now_s + 31}})) == "Token is not valid yet");
    CHECK(refusal(*authenticator, with({{"iss", "https://evil.example"}})) ==
          "Invalid token issuer");
    CHECK(refusal(*authenticator, with({{"iss", nullptr}})) == "Invalid token issuer");
    CHECK(refusal(*authenticator, with({{"aud", "other"}})) == "Invalid token audience");
    CHECK(refusal(*authenticator, with({{"role", "root"}})) == "Token has no valid role");
    CHECK(refusal(*authenticator, with({{"exp", "tomorrow"}})) == "Invalid token");
    CHECK(refusal(*authenticator, with({{"tenants", 3}})) == "Invalid token");
    auto roles = authenticator->authenticate(
        with({{"role", nullptr}, {"roles", {"read-only", "bogus", "admin"}}}), now_s);
    REQUIRE(roles.has_value());
    CHECK(roles->role == Role::admin);  // the highest of the array
    auto tenants = authenticator->authenticate(with({{"tenants", {"a", "b"}}}), now_s);
    REQUIRE(tenants.has_value());
    CHECK(tenants->tenants == std::vector<std::string>{"a", "b"});

    // Signatures: another secret, a changed payload, no signature, alg none, an RS256 header.
    CHECK(refusal(*authenticator, "Bearer " + jwt(header, good, secret + "x")) ==
          "Invalid token signature");
    std::string token = jwt(header, good);
    const std::size_t first = token.find('.');
    const std::size_t second = token.find('.', first + 1);
    const std::string forged = token.substr(0, first + 1) +
                               base64url_encode(claims({{"role", "admin"}}).dump()) +
                               token.substr(second);
    CHECK(refusal(*authenticator, forged) == "Invalid token signature");
    CHECK(refusal(*authenticator, token.substr(0, second + 1)) == "Invalid token signature");
    CHECK(refusal(*authenticator, jwt({{"alg", "none"}}, good)) ==
          "Token uses none, expected HS256 or RS256");
    const Pkey key = rsa_key();
    CHECK(refusal(*authenticator, jwt({{"alg", "RS256"}}, good, secret, key.get())) ==
          "Token uses RS256, expected HS256");
    for (const char* garbage : {"a.b", "a.b.c.d", "!!.e30.", "e30.!!.abc", "x"}) {
        CHECK(refusal(*authenticator, garbage) == "Invalid token");
    }
}

TEST_CASE("auth: RS256 tokens from a PEM key and from a JWKS by kid", "[auth]") {
    testing::TempDir dir;
    const Pkey one = rsa_key();
    const Pkey two = rsa_key();
    const Pkey stranger = rsa_key();
    const json good = claims({{"tenants", "*"}});

    SECTION("PEM") {
        Options options;
        options.is_enabled = true;
        options.jwt_public_key_file = write_file(dir, "key.pem", pem_of(one.get()), 0644);
        const auto authenticator = load(options);
        const auto grant =
            authenticator->authenticate(jwt({{"alg", "RS256"}}, good, secret, one.get()), now_s);
        REQUIRE(grant.has_value());
        CHECK(grant->covers("anything"));
        CHECK(refusal(*authenticator, jwt({{"alg", "RS256"}}, good, secret, stranger.get())) ==
              "Invalid token signature");
        CHECK(refusal(*authenticator, jwt({{"alg", "HS256"}}, good)) ==
              "Token uses HS256, expected RS256");
    }
    SECTION("JWKS") {
        Options options;
        options.is_enabled = true;
        const json jwks = {
            {"keys",
             {{{"kty", "EC"}, {"kid", "ec"}}, jwk_of(one.get(), "k1"), jwk_of(two.get(), "k2")}}};
        options.jwks_file = write_file(dir, "jwks.json", jwks.dump(), 0644);
        const auto authenticator = load(options);
        CHECK(authenticator->rsa_key_count() == 2);
        CHECK(authenticator
                  ->authenticate(jwt({{"alg", "RS256"}, {"kid", "k2"}}, good, secret, two.get()),
                                 now_s)
                  .has_value());
        // The kid picks the key: k1's name on k2's signature fails.
        CHECK(refusal(*authenticator, jwt({{"alg", "RS256"}, {"kid", "k1"}}, good, secret,
                                          two.get())) == "Invalid token signature");
        // No kid (or an unknown one): any key of the set may have signed it.
        CHECK(authenticator->authenticate(jwt({{"alg", "RS256"}}, good, secret, one.get()), now_s)
                  .has_value());
    }
    SECTION("short keys and broken files are refused at load") {
        Options options;
        options.is_enabled = true;
        const Pkey small = rsa_key(1024);
        options.jwt_public_key_file = write_file(dir, "small.pem", pem_of(small.get()), 0644);
        auto loaded = Authenticator::load(options);
        REQUIRE_FALSE(loaded.has_value());
        CHECK_THAT(loaded.error().message(), Catch::Contains("2048"));
        options.jwt_public_key_file.clear();
        options.jwks_file = write_file(dir, "jwks.json", R"({"keys": [{"kty": "RSA"}]})", 0644);
        loaded = Authenticator::load(options);
        REQUIRE_FALSE(loaded.has_value());
        CHECK_THAT(loaded.error().message(), Catch::Contains("needs n and e"));
        options.jwks_file = write_file(dir, "jwks.json", "[]", 0644);
        CHECK_FALSE(Authenticator::load(options).has_value());
    }
}

TEST_CASE("auth: options are checked", "[auth]") {
    Options options;
    CHECK(options.validate().has_value());  // off, nothing set
    options.is_enabled = true;
    CHECK_FALSE(options.validate().has_value());  // on, nothing to check tokens against
    options.jwt_hs256_secret = "short";
    CHECK_FALSE(options.validate().has_value());
    options.jwt_hs256_secret = secret;
    CHECK(options.validate().has_value());
    options.jwt_clock_skew_seconds = -1;
    CHECK_FALSE(options.validate().has_value());
}

TEST_CASE("auth: reload reads the tokens file again and keeps the old one when it fails",
          "[auth]") {
    testing::TempDir dir;
    const std::string first = "first-token-0123456789";
    const std::string second = "second-token-0123456789";
    Options options;
    options.is_enabled = true;
    options.tokens_file = write_file(dir, "tokens", "svc write * " + first + "\n", 0600);
    auto loaded = ReloadableAuthenticator::load(options);
    REQUIRE(loaded.has_value());
    ReloadableAuthenticator& authenticator = **loaded;
    const auto before = authenticator.current();
    CHECK(before->authenticate("Bearer " + first, now_s).has_value());

    // The first token is revoked, a second one added.
    write_file(dir, "tokens", "svc write * " + second + "\n", 0600);
    REQUIRE(authenticator.reload().has_value());
    CHECK_FALSE(authenticator.current()->authenticate("Bearer " + first, now_s).has_value());
    CHECK(authenticator.current()->authenticate("Bearer " + second, now_s).has_value());
    // A request that started before keeps what it had.
    CHECK(before->authenticate("Bearer " + first, now_s).has_value());

    // A file readable by others is refused, and the second token still works.
    write_file(dir, "tokens", "svc write * " + first + "\n", 0644);
    const auto failed = authenticator.reload();
    REQUIRE_FALSE(failed.has_value());
    CHECK_THAT(failed.error().message(), Catch::Contains("tokens"));
    CHECK(authenticator.current()->authenticate("Bearer " + second, now_s).has_value());
    CHECK_FALSE(authenticator.current()->authenticate("Bearer " + first, now_s).has_value());
}

}  // namespace
}  // namespace queen::auth
