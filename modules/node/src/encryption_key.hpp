// modules/node/src/encryption_key.hpp — where a node's payload encryption key comes from: the
// settings, a key file, or the key file the node creates in its data directory (a cluster node
// gets that one from its peers instead: key_exchange.hpp).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "queen/api/api.hpp"
#include "queen/core/ids.hpp"
#include "queen/core/result.hpp"
#include "queen/node/config.hpp"

namespace queen::node::detail {

/// The key file a node creates in its data directory when no key is supplied (relative to
/// node.data_dir; its directory is created with mode 0700).
inline constexpr std::string_view data_dir_key_file = "keys/payload.key";

/// The key a node runs with, and where it came from (for the start-up log line).
struct EncryptionKey {
    std::string hex;             ///< 64 hex digits; empty when security.payload_encryption = false
    std::string source;          ///< "QUEEN_ENCRYPTION_KEY", "security.encryption_key",
                                 ///< "security.encryption_key_file", "data_dir" or "disabled"
    std::filesystem::path path;  ///< the key file read or created; empty for the other sources
    bool is_created = false;     ///< this start wrote the data directory key file
    /// The data directory key file does not exist and was not created (MissingKeyFile::leave):
    /// `hex` is empty until the caller obtains the key and writes it with write_key_file().
    bool is_pending = false;
    NodeId received_from;  ///< the peer that handed this start its key (0: none did)
};

/// What resolve_encryption_key() does when the data directory key file does not exist.
enum class MissingKeyFile : std::uint8_t {
    create,  ///< a single node makes its own key
    leave,   ///< a cluster node: the cluster's key comes from a peer (key_exchange.hpp)
};

/// Reads a key file: 64 hex digits (a 32-byte AES-256 key), trailing whitespace such as a
/// newline ignored. The file must be a regular file (symlinks are followed) that gives group
/// and others no access (mode & 077 == 0, e.g. 0600 or 0400).
/// Errors: Errc::not_found (no such file), Errc::invalid_argument (not a regular file, group or
/// others have access, not 64 hex digits), Errc::io. Messages name the file and what is wrong,
/// never the key.
[[nodiscard]] Result<std::string> read_key_file(const std::filesystem::path& path);

/// A key file's key, and whether load_or_create_key_file() wrote the file.
struct LoadedKey {
    std::string hex;
    bool is_created = false;
};

/// Writes `hex` (64 hex digits) and a newline to `path` as load_or_create_key_file() creates a
/// key file: mode 0600, atomically, missing parent directories created with mode 0700. Never
/// replaces a file. Errors: Errc::invalid_argument (not a key), Errc::already_exists,
/// Errc::io, Errc::disk_full.
[[nodiscard]] Status write_key_file(const std::filesystem::path& path, std::string_view hex);

/// Reads `path` (as read_key_file) or, when it does not exist, creates it: 32 bytes from
/// `random` as 64 lower-case hex digits and a newline, mode 0600, written atomically (temp file,
/// fsync, rename, fsync the directory). Missing parent directories are created with mode 0700.
/// An existing file is never replaced, whatever is wrong with it.
/// Errors: those of read_key_file() except
/// not_found, Errc::io, Errc::disk_full.
[[nodiscard]] Result<LoadedKey> load_or_create_key_file(const std::filesystem::path& path,
                                                        api::RandomSource& random);

/// The key `config` asks for, by precedence: `env_key` (QUEEN_ENCRYPTION_KEY, "" when unset),
/// security.encryption_key, the file security.encryption_key_file (which must exist), then
/// <node.data_dir>/keys/payload.key (created when absent, or with MissingKeyFile::leave left
/// absent and reported `is_pending`). With security.payload_encryption = false there is no key
/// and `env_key` must be empty.
/// Errors: Errc::invalid_argument (a malformed key, naming where it came from, or a key given
/// while encryption is disabled), Errc::not_found (security.encryption_key_file does not
/// exist), and those of load_or_create_key_file().
[[nodiscard]] Result<EncryptionKey> resolve_encryption_key(
    const NodeConfig& config, std::string_view env_key, api::RandomSource& random,
    MissingKeyFile missing = MissingKeyFile::create);

}  // namespace queen::node::detail
