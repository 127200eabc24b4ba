// modules/node/src/encryption_key.cpp — reading, creating and choosing the payload encryption
// key.
#include "encryption_key.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>

#include "data_dir.hpp"

namespace queen::node::detail {
namespace {

constexpr std::size_t key_bytes = 32;
constexpr std::size_t key_file_bytes_max = 4096;

bool is_key_hex(std::string_view text) {
    if (text.size() != key_bytes * 2) {
        return false;
    }
    for (const char c : text) {
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) {
            return false;
        }
    }
    return true;
}

std::string octal_mode(mode_t mode) {
    char text[8];
    std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
    return text;
}

/// Closes a descriptor when the scope ends.
struct FileCloser {
    int fd;
    ~FileCloser() { ::close(fd); }
};

Error prefixed(Error error, std::string_view prefix) {
    error.context = std::string(prefix) + ": " + error.context;
    return error;
}

}  // namespace

Result<std::string> read_key_file(const std::filesystem::path& path) {
    const std::string name = path.string();
    // O_NONBLOCK: a FIFO put where the key should be must not hang the start.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        const int saved = errno;
        if (saved == ENOENT) {
            return Error{Errc::not_found, name + ": no such key file"};
        }
        return errno_error(saved, "open key file " + name);
    }
    const FileCloser closer{fd};
    struct stat status {};
    if (::fstat(fd, &status) != 0) {
        return errno_error(errno, "stat key file " + name);
    }
    if (!S_ISREG(status.st_mode)) {
        return Error{Errc::invalid_argument, name + ": the key file is not a regular file"};
    }
    if ((status.st_mode & 077) != 0) {
        return Error{Errc::invalid_argument,
                     name + ": mode " + octal_mode(status.st_mode) +
                         " gives group or others access to the encryption key; allow its owner "
                         "only (chmod 600 " +
                         name + ")"};
    }
    if (static_cast<std::uint64_t>(status.st_size) > key_file_bytes_max) {
        return Error{Errc::invalid_argument,
                     name + ": " + std::to_string(status.st_size) +
                         " bytes; a key file holds 64 hex digits (a 32-byte AES-256 key)"};
    }
    std::string text(key_file_bytes_max + 1, '\0');
    std::size_t length = 0;
    while (length < text.size()) {
        const ssize_t n = ::read(fd, text.data() + length, text.size() - length);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            return errno_error(errno, "read key file " + name);
        }
        if (n == 0) {
            break;
        }
        length += static_cast<std::size_t>(n);
    }
    while (length > 0 && (text[length - 1] == '\n' || text[length - 1] == '\r' ||
                          text[length - 1] == ' ' || text[length - 1] == '\t')) {
        --length;
    }
    text.resize(length);
    if (length != key_bytes * 2) {
        return Error{Errc::invalid_argument,
                     name + ": expected 64 hex digits (a 32-byte AES-256 key), found " +
                         std::to_string(length) + " characters"};
    }
    if (!is_key_hex(text)) {
        return Error{Errc::invalid_argument,
                     name +
                         ": expected 64 hex digits (a 32-byte AES-256 key), found a character "
                         "that is not a hex digit"};
    }
    return text;
}

Status write_key_file(const std::filesystem::path& path, std::string_view hex) {
    if (!is_key_hex(hex)) {
        return Error{Errc::invalid_argument,
                     path.string() + ": a key is 64 hex digits (a 32-byte AES-256 key)"};
    }
    std::error_code ec;
    if (std::filesystem::symlink_status(path, ec).type() != std::filesystem::file_type::not_found) {
        return Error{Errc::already_exists, path.string() + ": a key file is never replaced"};
    }
    const auto parent = path.parent_path();
    if (!parent.empty() && !std::filesystem::exists(parent)) {
        QUEEN_TRY(create_directories_durably(parent));
        std::filesystem::permissions(parent, std::filesystem::perms::owner_all,
                                     std::filesystem::perm_options::replace, ec);
        if (ec) {
            return errno_error(ec.value(), "chmod 700 " + parent.string());
        }
    }
    return write_file_durably(path, std::string(hex) + "\n", 0600);
}

Result<LoadedKey> load_or_create_key_file(const std::filesystem::path& path,
                                          api::RandomSource& random) {
    auto existing = read_key_file(path);
    if (existing) {
        return LoadedKey{std::move(existing).value(), false};
    }
    if (!existing.error().is(Errc::not_found)) {
        return std::move(existing).error();
    }
    std::array<std::uint8_t, key_bytes> key{};
    random.fill(key.data(), key.size());
    static constexpr char digits[] = "0123456789abcdef";
    std::string hex;
    for (const std::uint8_t byte : key) {
        hex += digits[byte >> 4];
        hex += digits[byte & 0xf];
    }
    key.fill(0);
    QUEEN_TRY(write_key_file(path, hex));
    return LoadedKey{std::move(hex), true};
}

Result<EncryptionKey> resolve_encryption_key(const NodeConfig& config, std::string_view env_key,
                                             api::RandomSource& random, MissingKeyFile missing) {
    EncryptionKey key;
    if (!config.is_payload_encryption_enabled) {
        if (!env_key.empty()) {
            return Error{Errc::invalid_argument,
                         "QUEEN_ENCRYPTION_KEY is set, but security.payload_encryption = false"};
        }
        key.source = "disabled";
        return key;
    }
    if (!env_key.empty()) {
        if (!is_key_hex(env_key)) {
            return Error{Errc::invalid_argument,
                         "QUEEN_ENCRYPTION_KEY must be 64 hex digits (a 32-byte AES-256 key)"};
        }
        key.hex = env_key;
        key.source = "QUEEN_ENCRYPTION_KEY";
        return key;
    }
    if (!config.encryption_key_hex.empty()) {
        if (!is_key_hex(config.encryption_key_hex)) {
            return Error{Errc::invalid_argument,
                         "security.encryption_key must be 64 hex digits (a 32-byte AES-256 key)"};
        }
        key.hex = config.encryption_key_hex;
        key.source = "security.encryption_key";
        return key;
    }
    if (!config.encryption_key_file.empty()) {
        auto read = read_key_file(config.encryption_key_file);
        if (!read) {
            Error error = std::move(read).error();
            if (error.is(Errc::not_found)) {
                error.context += " (a key file named in the settings is never created)";
            }
            return prefixed(std::move(error), "security.encryption_key_file");
        }
        key.hex = std::move(read).value();
        key.source = "security.encryption_key_file";
        key.path = config.encryption_key_file;
        return key;
    }
    key.path = config.node.data_dir / data_dir_key_file;
    key.source = "data_dir";
    if (missing == MissingKeyFile::leave) {
        auto existing = read_key_file(key.path);
        if (existing) {
            key.hex = std::move(existing).value();
            return key;
        }
        if (!existing.error().is(Errc::not_found)) {
            return std::move(existing).error();
        }
        key.is_pending = true;
        return key;
    }
    QUEEN_TRY(auto loaded, load_or_create_key_file(key.path, random));
    key.hex = std::move(loaded.hex);
    key.is_created = loaded.is_created;
    return key;
}

}  // namespace queen::node::detail
