// modules/node/src/data_dir.hpp — the data directory: its lock file and node.toml identity.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string_view>

#include <sys/types.h>

#include "queen/core/result.hpp"

namespace queen::node::detail {

/// An exclusive lock on <data_dir>/LOCK held for the life of the object (flock).
class DataDirLock {
public:
    /// Errors: Errc::busy when another process holds it, Errc::io.
    [[nodiscard]] static Result<DataDirLock> acquire(const std::filesystem::path& data_dir);
    DataDirLock(DataDirLock&& other) noexcept;
    DataDirLock& operator=(DataDirLock&& other) noexcept;
    DataDirLock(const DataDirLock&) = delete;
    DataDirLock& operator=(const DataDirLock&) = delete;
    ~DataDirLock();

private:
    explicit DataDirLock(int fd) : fd_(fd) {}
    int fd_ = -1;
};

/// What node.toml records about this node (written once, at first start).
struct NodeIdentity {
    std::uint64_t node_id = 0;
    std::string cluster_id;  // 32 hex digits
    std::uint32_t format_version = 1;
};

/// Reads <data_dir>/node.toml, or writes it (fsync + dir fsync) when absent.
/// Errors: Errc::invalid_argument when it names another node id, Errc::corruption when malformed,
/// Errc::io.
[[nodiscard]] Result<NodeIdentity> load_or_create_identity(const std::filesystem::path& data_dir,
                                                           std::uint64_t node_id,
                                                           std::uint64_t random_bits);

/// mkdir -p, then fsync the parent of every directory created.
[[nodiscard]] Status create_directories_durably(const std::filesystem::path& dir);

/// Writes `contents` to `path` atomically: temp file (`path` + ".tmp", created with `mode`
/// less the umask), fsync, rename, fsync the directory.
[[nodiscard]] Status write_file_durably(const std::filesystem::path& path,
                                        std::string_view contents, mode_t mode = 0644);

/// Removes `path` (no error when it is missing), then fsyncs its directory.
[[nodiscard]] Status remove_file_durably(const std::filesystem::path& path);

/// Removes `path` and everything below it (no error when it is missing), then fsyncs its
/// directory when something was removed.
[[nodiscard]] Status remove_tree_durably(const std::filesystem::path& path);

/// rename(2) of `from` to `to` (a file or a directory; `to` must not be a non-empty
/// directory), then fsyncs the directories of both.
[[nodiscard]] Status rename_durably(const std::filesystem::path& from,
                                    const std::filesystem::path& to);

/// fsync(2) of a file or a directory.
[[nodiscard]] Status sync_path(const std::filesystem::path& path);

}  // namespace queen::node::detail
