// queen/auth/auth.hpp — who is asking: a bearer token (a static API token or a JWT) -> a role on a
// set of tenants.
//
// The HTTP API asks `Authenticator::authenticate` with the request's `Authorization` header and
// checks the Grant against the role its route needs on the request's tenant (docs/security.md,
// "Authentication"). Two kinds of token, both sent as `Authorization: Bearer <token>` (the
// official clients' `bearerToken`; a header without the `Bearer ` prefix is taken whole):
//
// - **Static API tokens**, for simple setups: a file of lines `<name> <role> <tenants> <token>`
//   (tenants comma-separated, `*` for all; `#` starts a comment). The file must not be readable
//   by group or others. Tokens are compared by their SHA-256, in constant time per entry.
// - **JWTs** (RFC 7519) signed HS256 (a shared secret) or RS256 (an RSA public key as PEM, or a
//   JWKS file whose keys are picked by `kid`). `exp` and `nbf` are checked with a clock skew, `iss`
//   and `aud` when configured. The role is the string claim `role` or the highest of the array
//   claim `roles`; the tenants the string-or-array claim `tenants` (absent: the default tenant
//   only); `sub` names the caller in logs.
//
// Roles are cumulative: read (pops' reads: listings, message detail, DLQ, traces, status) <
// write (push, pop, ack, transactions, KV, locks, timers) < admin (configure... see the API's
// route table). Spellings: `read` / `read-only`, `write` / `read-write`, `admin`.
//
// Thread-safety: an Authenticator is immutable after load(): authenticate() may be called from
// any thread at once.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "queen/core/result.hpp"

namespace queen::auth {

/// What a caller may do, cumulative: read < write < admin.
enum class Role : std::uint8_t { read = 1, write = 2, admin = 3 };

/// "read"/"read-only" -> read, "write"/"read-write" -> write, "admin" -> admin; else nullopt.
[[nodiscard]] std::optional<Role> parse_role(std::string_view text) noexcept;
/// "read", "write" or "admin".
[[nodiscard]] std::string_view role_name(Role role) noexcept;

/// What a valid token grants.
struct Grant {
    Role role = Role::read;
    std::vector<std::string> tenants;  ///< the tenants it may address; "*" = every tenant
    std::string subject;               ///< the JWT's `sub`, or the static token's name

    /// Whether the grant reaches `tenant` ("*" asks for every tenant: only a "*" grant does).
    [[nodiscard]] bool covers(std::string_view tenant) const noexcept;
    /// covers(tenant) and role >= needed.
    [[nodiscard]] bool allows(std::string_view tenant, Role needed) const noexcept;
};

/// Where the keys and tokens come from, and what a JWT must say. Every path is read by load().
struct Options {
    /// Off: every request is served (docs/security.md says when that is safe).
    bool is_enabled = false;
    /// Static API tokens: lines `<name> <role> <tenants> <token>`; mode 0600 or stricter.
    std::filesystem::path tokens_file;
    /// HS256: the shared secret (at least 32 bytes); empty = HS256 tokens are refused.
    std::string jwt_hs256_secret;
    /// RS256: an RSA public key in PEM (SubjectPublicKeyInfo); empty = none.
    std::filesystem::path jwt_public_key_file;
    /// RS256: a JWKS file ({"keys": [{"kty": "RSA", "kid", "n", "e"}, ...]}); empty = none.
    std::filesystem::path jwks_file;
    std::string jwt_issuer;                    ///< non-empty: `iss` must equal it
    std::string jwt_audience;                  ///< non-empty: `aud` (string or array) must hold it
    std::int64_t jwt_clock_skew_seconds = 30;  ///< leeway for `exp` and `nbf`
    std::string default_tenant = "default";    ///< what a JWT without `tenants` may address

    /// Enabled with no way to accept a token (no tokens file, secret, key or JWKS) is an error;
    /// so are a secret under 32 bytes and a negative skew. Errors: Errc::invalid_argument.
    [[nodiscard]] Status validate() const;
};

/// Checks bearer tokens against the keys and tokens of Options.
class Authenticator {
public:
    /// Reads the tokens file, the PEM key and the JWKS file. Errors: Errc::invalid_argument
    /// (Options::validate, a malformed line, role or key, a file readable by others) naming the
    /// file and line; Errc::io when a file cannot be read.
    [[nodiscard]] static Result<std::shared_ptr<const Authenticator>> load(const Options& options);

    ~Authenticator();
    Authenticator(const Authenticator&) = delete;
    Authenticator& operator=(const Authenticator&) = delete;

    /// The grant of the `Authorization` header's value `authorization` at `now_s` (Unix
    /// seconds). Errors, all Errc::invalid_argument with the words the client sees (a 401):
    /// "Authentication required" (empty), "Invalid token" (neither a known static token nor a
    /// well-formed JWT), "Token uses <alg>, expected HS256 or RS256", "Invalid token signature",
    /// "Token has expired", "Token is not valid yet", "Invalid token issuer", "Invalid token
    /// audience", "Token has no valid role".
    [[nodiscard]] Result<Grant> authenticate(std::string_view authorization,
                                             std::int64_t now_s) const;

    /// How many static tokens and RS256 keys were loaded (for the start-up log line).
    [[nodiscard]] std::size_t static_token_count() const noexcept;
    [[nodiscard]] std::size_t rsa_key_count() const noexcept;

    struct Impl;

private:
    explicit Authenticator(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

/// The Authenticator requests are checked with, replaced while they run: reload() reads the
/// files of its Options again (a revoked static token, a rotated JWKS or public key; what
/// `queen serve` does on SIGHUP). A request keeps the Authenticator it started with.
/// Thread-safety: all members are thread-safe.
class ReloadableAuthenticator {
public:
    /// As Authenticator::load(). Errors: as Authenticator::load().
    [[nodiscard]] static Result<std::shared_ptr<ReloadableAuthenticator>> load(Options options);

    /// The Authenticator in use.
    [[nodiscard]] std::shared_ptr<const Authenticator> current() const;
    /// Loads the files again and uses them from now on; on error the current Authenticator
    /// stays. Errors: as Authenticator::load().
    [[nodiscard]] Status reload();

private:
    ReloadableAuthenticator(Options options, std::shared_ptr<const Authenticator> current);
    const Options options_;
    mutable std::mutex mutex_;
    std::shared_ptr<const Authenticator> current_;
};

}  // namespace queen::auth
