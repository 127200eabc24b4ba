// auth/src/auth.cpp — static API tokens and JWTs (HS256, RS256 from PEM or JWKS) -> Grant.
#include "queen/auth/auth.hpp"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <openssl/sha.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "queen/core/base64url.hpp"

namespace queen::auth {

namespace {

using nlohmann::json;
using Digest = std::array<unsigned char, SHA256_DIGEST_LENGTH>;

/// The longest token looked at: a JWT with a few claims is well under 2 KiB.
constexpr std::size_t token_bytes_max = 16 * 1024;
/// HS256 secrets shorter than the hash are guessable (RFC 7518 3.2).
constexpr std::size_t hs256_secret_bytes_min = 32;
/// RSA keys under 2048 bits are refused.
constexpr int rsa_bits_min = 2048;

Error invalid(std::string message) {
    return Error{Errc::invalid_argument, std::move(message)};
}

struct PkeyFree {
    void operator()(EVP_PKEY* key) const noexcept { EVP_PKEY_free(key); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;

Digest sha256(std::string_view text) {
    Digest digest{};
    SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest.data());
    return digest;
}

Result<std::string> read_file(const std::filesystem::path& path, bool must_be_private) {
    struct stat info {};
    if (::stat(path.c_str(), &info) != 0) {
        return Error{Errc::io, path.string() + ": " + std::strerror(errno)};
    }
    if (must_be_private && (info.st_mode & 077) != 0) {
        return invalid(path.string() + " is readable by group or others: chmod 600 it");
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        return Error{Errc::io, path.string() + ": cannot be opened"};
    }
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

std::vector<std::string> split(std::string_view text, char separator) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start <= text.size()) {
        const std::size_t end = std::min(text.find(separator, start), text.size());
        out.emplace_back(text.substr(start, end - start));
        start = end + 1;
    }
    return out;
}

/// An RSA public key of at least rsa_bits_min bits, or the reason it is not.
Result<Pkey> checked_rsa(Pkey key, const std::string& where) {
    if (!key || EVP_PKEY_base_id(key.get()) != EVP_PKEY_RSA) {
        return invalid(where + ": not an RSA public key");
    }
    if (EVP_PKEY_get_bits(key.get()) < rsa_bits_min) {
        return invalid(where + ": RSA keys must have at least " + std::to_string(rsa_bits_min) +
                       " bits");
    }
    return key;
}

Result<Pkey> rsa_from_pem(const std::string& pem, const std::string& where) {
    BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
    if (bio == nullptr) {
        return Error{Errc::internal, "BIO_new_mem_buf failed"};
    }
    Pkey key(PEM_read_bio_PUBKEY(bio, nullptr, nullptr, nullptr));
    BIO_free(bio);
    return checked_rsa(std::move(key), where);
}

Result<Pkey> rsa_from_jwk(const std::string& n_text, const std::string& e_text,
                          const std::string& where) {
    const auto n = base64url_decode(n_text);
    const auto e = base64url_decode(e_text);
    if (!n || !e || n->empty() || e->empty()) {
        return invalid(where + ": n and e must be base64url");
    }
    BIGNUM* bn_n = BN_bin2bn(reinterpret_cast<const unsigned char*>(n->data()),
                             static_cast<int>(n->size()), nullptr);
    BIGNUM* bn_e = BN_bin2bn(reinterpret_cast<const unsigned char*>(e->data()),
                             static_cast<int>(e->size()), nullptr);
    OSSL_PARAM_BLD* builder = OSSL_PARAM_BLD_new();
    OSSL_PARAM* params = nullptr;
    EVP_PKEY_CTX* context = EVP_PKEY_CTX_new_from_name(nullptr, "RSA", nullptr);
    EVP_PKEY* raw = nullptr;
    if (bn_n != nullptr && bn_e != nullptr && builder != nullptr && context != nullptr &&
        OSSL_PARAM_BLD_push_BN(builder, OSSL_PKEY_PARAM_RSA_N, bn_n) == 1 &&
        OSSL_PARAM_BLD_push_BN(builder, OSSL_PKEY_PARAM_RSA_E, bn_e) == 1) {
        params = OSSL_PARAM_BLD_to_param(builder);
        if (params != nullptr && EVP_PKEY_fromdata_init(context) == 1) {
            (void)EVP_PKEY_fromdata(context, &raw, EVP_PKEY_PUBLIC_KEY, params);
        }
    }
    EVP_PKEY_CTX_free(context);
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(builder);
    BN_free(bn_n);
    BN_free(bn_e);
    return checked_rsa(Pkey(raw), where);
}

bool verify_rs256(EVP_PKEY* key, std::string_view data, std::string_view signature) {
    EVP_MD_CTX* context = EVP_MD_CTX_new();
    if (context == nullptr) {
        return false;
    }
    const bool ok =
        EVP_DigestVerifyInit(context, nullptr, EVP_sha256(), nullptr, key) == 1 &&
        EVP_DigestVerify(context, reinterpret_cast<const unsigned char*>(signature.data()),
                         signature.size(), reinterpret_cast<const unsigned char*>(data.data()),
                         data.size()) == 1;
    EVP_MD_CTX_free(context);
    return ok;
}

bool verify_hs256(const std::string& secret, std::string_view data, std::string_view signature) {
    std::array<unsigned char, EVP_MAX_MD_SIZE> mac{};
    unsigned int size = 0;
    if (HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
             reinterpret_cast<const unsigned char*>(data.data()), data.size(), mac.data(),
             &size) == nullptr) {
        return false;
    }
    return signature.size() == size && CRYPTO_memcmp(mac.data(), signature.data(), size) == 0;
}

/// A JSON object from base64url text, or nullopt.
std::optional<json> json_part(std::string_view text) {
    const auto bytes = base64url_decode(text);
    if (!bytes) {
        return std::nullopt;
    }
    json value = json::parse(*bytes, nullptr, false);
    if (value.is_discarded() || !value.is_object()) {
        return std::nullopt;
    }
    return value;
}

/// What a client sees of an `alg` value: printable ASCII, at most 16 characters.
std::string shown(std::string_view text) {
    std::string out;
    for (const char c : text.substr(0, 16)) {
        out.push_back(c >= 0x20 && c < 0x7f ? c : '?');
    }
    return out;
}

}  // namespace

std::optional<Role> parse_role(std::string_view text) noexcept {
    if (text == "read" || text == "read-only") {
        return Role::read;
    }
    if (text == "write" || text == "read-write") {
        return Role::write;
    }
    if (text == "admin") {
        return Role::admin;
    }
    return std::nullopt;
}

std::string_view role_name(Role role) noexcept {
    switch (role) {
        case Role::read: return "read";
        case Role::write: return "write";
        case Role::admin: return "admin";
    }
    return "read";
}

bool Grant::covers(std::string_view tenant) const noexcept {
    return std::any_of(tenants.begin(), tenants.end(), [&](const std::string& granted) {
        return granted == "*" || (tenant != "*" && granted == tenant);
    });
}

bool Grant::allows(std::string_view tenant, Role needed) const noexcept {
    return role >= needed && covers(tenant);
}

Status Options::validate() const {
    if (jwt_clock_skew_seconds < 0 || jwt_clock_skew_seconds > 3600) {
        return invalid("jwt_clock_skew_seconds must be in [0, 3600]");
    }
    if (!jwt_hs256_secret.empty() && jwt_hs256_secret.size() < hs256_secret_bytes_min) {
        return invalid("jwt_hs256_secret must be at least " +
                       std::to_string(hs256_secret_bytes_min) + " bytes");
    }
    if (is_enabled && tokens_file.empty() && jwt_hs256_secret.empty() &&
        jwt_public_key_file.empty() && jwks_file.empty()) {
        return invalid(
            "enabled with nothing to check tokens against: set tokens_file, jwt_hs256_secret, "
            "jwt_public_key_file or jwks_file");
    }
    return {};
}

struct Authenticator::Impl {
    struct StaticToken {
        Digest digest{};
        Grant grant;
    };
    struct RsaKey {
        std::string kid;  ///< "" for the PEM key
        Pkey key;
    };

    std::vector<StaticToken> tokens;
    std::string hs256_secret;
    std::vector<RsaKey> rsa_keys;
    std::string issuer;
    std::string audience;
    std::int64_t skew_s = 30;
    std::string default_tenant;

    Status load_tokens(const std::filesystem::path& path) {
        QUEEN_TRY(const std::string text, read_file(path, true));
        std::size_t line_number = 0;
        for (const std::string& raw : split(text, '\n')) {
            ++line_number;
            std::string line = raw.substr(0, raw.find('#'));
            std::istringstream words(line);
            std::string name;
            std::string role_text;
            std::string tenants_text;
            std::string token;
            std::string extra;
            if (!(words >> name)) {
                continue;  // blank or comment
            }
            const std::string where = path.string() + ":" + std::to_string(line_number);
            if (!(words >> role_text >> tenants_text >> token) || (words >> extra)) {
                return invalid(where + ": expected <name> <role> <tenants> <token>");
            }
            const auto role = parse_role(role_text);
            if (!role) {
                return invalid(where + ": role must be read, write or admin, not " + role_text);
            }
            if (token.size() < 16) {
                return invalid(where + ": a token must be at least 16 characters");
            }
            StaticToken entry;
            entry.digest = sha256(token);
            entry.grant.role = *role;
            entry.grant.subject = name;
            entry.grant.tenants = split(tenants_text, ',');
            for (const std::string& tenant : entry.grant.tenants) {
                if (tenant.empty()) {
                    return invalid(where + ": an empty tenant in " + tenants_text);
                }
            }
            for (const StaticToken& other : tokens) {
                if (other.digest == entry.digest) {
                    return invalid(where + ": the same token as " + other.grant.subject);
                }
            }
            tokens.push_back(std::move(entry));
        }
        return {};
    }

    Status load_jwks(const std::filesystem::path& path) {
        QUEEN_TRY(const std::string text, read_file(path, false));
        const json document = json::parse(text, nullptr, false);
        if (document.is_discarded() || !document.is_object() || !document.contains("keys") ||
            !document["keys"].is_array()) {
            return invalid(path.string() + ": not a JWKS document ({\"keys\": [...]})");
        }
        std::size_t index = 0;
        for (const json& jwk : document["keys"]) {
            const std::string where = path.string() + " key " + std::to_string(index++);
            if (!jwk.is_object() || jwk.value("kty", "") != "RSA") {
                continue;  // other key types cannot sign RS256
            }
            if (jwk.contains("use") && jwk["use"] != "sig") {
                continue;
            }
            if (!jwk.contains("n") || !jwk["n"].is_string() || !jwk.contains("e") ||
                !jwk["e"].is_string()) {
                return invalid(where + ": an RSA key needs n and e");
            }
            QUEEN_TRY(Pkey key, rsa_from_jwk(jwk["n"].get<std::string>(),
                                             jwk["e"].get<std::string>(), where));
            rsa_keys.push_back(RsaKey{jwk.value("kid", ""), std::move(key)});
        }
        if (rsa_keys.empty()) {
            return invalid(path.string() + ": no RSA signing key");
        }
        return {};
    }

    Result<Grant> verify_jwt(std::string_view token, std::int64_t now_s) const {
        const std::size_t first = token.find('.');
        const std::size_t second = token.find('.', first + 1);
        if (first == std::string_view::npos || second == std::string_view::npos ||
            token.find('.', second + 1) != std::string_view::npos) {
            return invalid("Invalid token");
        }
        const auto header = json_part(token.substr(0, first));
        const auto signature = base64url_decode(token.substr(second + 1));
        if (!header || !signature) {
            return invalid("Invalid token");
        }
        std::string alg;
        if (const auto found = header->find("alg"); found != header->end() && found->is_string()) {
            alg = found->get<std::string>();
        }
        const std::string_view signed_part = token.substr(0, second);
        if (alg == "HS256") {
            if (hs256_secret.empty()) {
                return invalid("Token uses HS256, expected RS256");
            }
            if (!verify_hs256(hs256_secret, signed_part, *signature)) {
                return invalid("Invalid token signature");
            }
        } else if (alg == "RS256") {
            if (rsa_keys.empty()) {
                return invalid("Token uses RS256, expected HS256");
            }
            const std::string kid = header->contains("kid") && (*header)["kid"].is_string()
                                        ? (*header)["kid"].get<std::string>()
                                        : std::string();
            const bool has_kid = std::any_of(rsa_keys.begin(), rsa_keys.end(),
                                             [&](const RsaKey& k) { return k.kid == kid; });
            const bool verified =
                std::any_of(rsa_keys.begin(), rsa_keys.end(), [&](const RsaKey& k) {
                    return (!has_kid || k.kid == kid) &&
                           verify_rs256(k.key.get(), signed_part, *signature);
                });
            if (!verified) {
                return invalid("Invalid token signature");
            }
        } else if (alg.empty()) {
            return invalid("Invalid token");
        } else {
            return invalid("Token uses " + shown(alg) + ", expected HS256 or RS256");
        }
        // Signed by us: now read what it says.
        const auto claims = json_part(token.substr(first + 1, second - first - 1));
        if (!claims) {
            return invalid("Invalid token");
        }
        const auto number = [&](const char* name) -> std::optional<std::int64_t> {
            if (!claims->contains(name) || !(*claims)[name].is_number()) {
                return std::nullopt;
            }
            return static_cast<std::int64_t>((*claims)[name].get<double>());
        };
        if (claims->contains("exp") && !number("exp")) {
            return invalid("Invalid token");
        }
        if (const auto exp = number("exp"); exp && now_s > *exp + skew_s) {
            return invalid("Token has expired");
        }
        if (const auto nbf = number("nbf"); nbf && now_s + skew_s < *nbf) {
            return invalid("Token is not valid yet");
        }
        if (!issuer.empty() && claims->value("iss", json()) != json(issuer)) {
            return invalid("Invalid token issuer");
        }
        if (!audience.empty()) {
            const json aud = claims->value("aud", json());
            const bool ok =
                aud == json(audience) ||
                (aud.is_array() && std::find(aud.begin(), aud.end(), json(audience)) != aud.end());
            if (!ok) {
                return invalid("Invalid token audience");
            }
        }
        Grant grant;
        std::optional<Role> role;
        if (const json value = claims->value("role", json()); value.is_string()) {
            role = parse_role(value.get<std::string>());
        }
        if (const json values = claims->value("roles", json()); !role && values.is_array()) {
            for (const json& value : values) {
                const auto one = value.is_string() ? parse_role(value.get<std::string>())
                                                   : std::optional<Role>();
                if (one && (!role || *one > *role)) {
                    role = one;
                }
            }
        }
        if (!role) {
            return invalid("Token has no valid role");
        }
        grant.role = *role;
        const json tenants = claims->value("tenants", json());
        if (tenants.is_null()) {
            grant.tenants = {default_tenant};
        } else if (tenants.is_string()) {
            grant.tenants = {tenants.get<std::string>()};
        } else if (tenants.is_array() && std::all_of(tenants.begin(), tenants.end(),
                                                     [](const json& t) { return t.is_string(); })) {
            for (const json& tenant : tenants) {
                grant.tenants.push_back(tenant.get<std::string>());
            }
        } else {
            return invalid("Invalid token");
        }
        if (const json sub = claims->value("sub", json()); sub.is_string()) {
            grant.subject = sub.get<std::string>();
        }
        return grant;
    }
};

Authenticator::Authenticator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Authenticator::~Authenticator() = default;

Result<std::shared_ptr<const Authenticator>> Authenticator::load(const Options& options) {
    QUEEN_TRY(options.validate());
    auto impl = std::make_unique<Impl>();
    impl->hs256_secret = options.jwt_hs256_secret;
    impl->issuer = options.jwt_issuer;
    impl->audience = options.jwt_audience;
    impl->skew_s = options.jwt_clock_skew_seconds;
    impl->default_tenant = options.default_tenant;
    if (!options.tokens_file.empty()) {
        QUEEN_TRY(impl->load_tokens(options.tokens_file));
    }
    if (!options.jwt_public_key_file.empty()) {
        QUEEN_TRY(const std::string pem, read_file(options.jwt_public_key_file, false));
        QUEEN_TRY(Pkey key, rsa_from_pem(pem, options.jwt_public_key_file.string()));
        impl->rsa_keys.push_back(Impl::RsaKey{"", std::move(key)});
    }
    if (!options.jwks_file.empty()) {
        QUEEN_TRY(impl->load_jwks(options.jwks_file));
    }
    return std::shared_ptr<const Authenticator>(new Authenticator(std::move(impl)));
}

Result<Grant> Authenticator::authenticate(std::string_view authorization,
                                          std::int64_t now_s) const {
    const auto trim = [](std::string_view& text) {
        while (!text.empty() && text.front() == ' ') {
            text.remove_prefix(1);
        }
        while (!text.empty() && text.back() == ' ') {
            text.remove_suffix(1);
        }
    };
    trim(authorization);
    constexpr std::string_view bearer = "bearer";
    const bool has_prefix =
        authorization.size() >= bearer.size() &&
        std::equal(
            bearer.begin(), bearer.end(), authorization.begin(),
            [](char a, char b) { return a == (b >= 'A' && b <= 'Z' ? b - 'A' + 'a' : b); }) &&
        (authorization.size() == bearer.size() || authorization[bearer.size()] == ' ');
    if (has_prefix) {
        authorization.remove_prefix(bearer.size());
        trim(authorization);
    }
    if (authorization.empty()) {
        return invalid("Authentication required");
    }
    if (authorization.size() > token_bytes_max) {
        return invalid("Invalid token");
    }
    if (!impl_->tokens.empty()) {
        const Digest digest = sha256(authorization);
        const Impl::StaticToken* found = nullptr;
        for (const Impl::StaticToken& entry : impl_->tokens) {  // every entry: no early exit
            if (CRYPTO_memcmp(entry.digest.data(), digest.data(), digest.size()) == 0) {
                found = &entry;
            }
        }
        if (found != nullptr) {
            return found->grant;
        }
    }
    if (impl_->hs256_secret.empty() && impl_->rsa_keys.empty()) {
        return invalid("Invalid token");
    }
    return impl_->verify_jwt(authorization, now_s);
}

std::size_t Authenticator::static_token_count() const noexcept {
    return impl_->tokens.size();
}

std::size_t Authenticator::rsa_key_count() const noexcept {
    return impl_->rsa_keys.size();
}

ReloadableAuthenticator::ReloadableAuthenticator(Options options,
                                                 std::shared_ptr<const Authenticator> current)
    : options_(std::move(options)), current_(std::move(current)) {}

Result<std::shared_ptr<ReloadableAuthenticator>> ReloadableAuthenticator::load(Options options) {
    QUEEN_TRY(auto first, Authenticator::load(options));
    return std::shared_ptr<ReloadableAuthenticator>(
        new ReloadableAuthenticator(std::move(options), std::move(first)));
}

std::shared_ptr<const Authenticator> ReloadableAuthenticator::current() const {
    const std::lock_guard lock(mutex_);
    return current_;
}

Status ReloadableAuthenticator::reload() {
    QUEEN_TRY(auto fresh, Authenticator::load(options_));
    const std::lock_guard lock(mutex_);
    current_ = std::move(fresh);
    return {};
}

}  // namespace queen::auth
