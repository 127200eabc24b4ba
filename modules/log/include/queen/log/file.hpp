// queen/log/file.hpp — the file-system interface the log does its I/O through (POSIX or a fake
// that injects failures in tests). Not a general-purpose VFS: only what the log needs.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "queen/core/bytes.hpp"
#include "queen/core/result.hpp"

namespace queen::log {

/// An open file. Positions are explicit (pread/pwrite style); there is no cursor.
/// Errors of every call: Errc::io, Errc::disk_full (ENOSPC/EDQUOT), with the path and errno text.
/// Thread-safety: concurrent read_at calls are safe; writes, sync and truncate are serialised by
/// the caller.
class File {
public:
    virtual ~File() = default;
    /// Writes up to data.size() bytes at `offset`; returns how many were written (may be short,
    /// never 0 for a non-empty `data` unless an error is returned). A direct file whose write
    /// the kernel refuses (EINVAL: alignment, file system) fails with Errc::unsupported.
    [[nodiscard]] virtual Result<std::size_t> write_at(std::uint64_t offset, ByteSpan data) = 0;
    /// Reads up to out.size() bytes at `offset`; returns how many (0 only at end of file).
    [[nodiscard]] virtual Result<std::size_t> read_at(std::uint64_t offset,
                                                      MutableByteSpan out) const = 0;
    /// fdatasync(2): data and the metadata needed to read it (size) reach stable storage.
    [[nodiscard]] virtual Status sync_data() = 0;
    /// ftruncate(2) to `size` bytes.
    [[nodiscard]] virtual Status truncate(std::uint64_t size) = 0;
    /// Current size in bytes (fstat).
    [[nodiscard]] virtual Result<std::uint64_t> size() const = 0;
    /// 0 for a file from FileSystem::open. For one from FileSystem::open_direct: the alignment
    /// in bytes that the offset, the size and the buffer address of every write_at must have.
    [[nodiscard]] virtual std::size_t direct_alignment() const noexcept { return 0; }
};

/// How to open a file.
enum class OpenMode : std::uint8_t {
    read_only,         ///< O_RDONLY; fails with Errc::not_found when missing
    read_write,        ///< O_RDWR; fails with Errc::not_found when missing
    create_exclusive,  ///< O_RDWR|O_CREAT|O_EXCL; fails with Errc::already_exists when present
};

/// Directory and file operations. Errors as for File, plus Errc::not_found / already_exists
/// where stated. Thread-safety: implementations are safe to call from any thread.
class FileSystem {
public:
    virtual ~FileSystem() = default;
    [[nodiscard]] virtual Result<std::unique_ptr<File>> open(const std::filesystem::path& path,
                                                             OpenMode mode) = 0;
    /// Opens an existing file for direct writes (O_DIRECT: the data goes from the caller's
    /// buffer to the device, not through the page cache; durable after sync_data). Only
    /// write_at and sync_data are meant for it; see File::direct_alignment. Errc::unsupported
    /// when the file system does not do direct I/O (tmpfs, some network file systems).
    [[nodiscard]] virtual Result<std::unique_ptr<File>> open_direct(
        const std::filesystem::path& path) {
        return Error{Errc::unsupported, "direct I/O on " + path.string()};
    }
    /// unlink(2). Errc::not_found when missing.
    [[nodiscard]] virtual Status remove(const std::filesystem::path& path) = 0;
    /// Names (not paths) of the entries of `dir`, unsorted.
    [[nodiscard]] virtual Result<std::vector<std::string>> list(
        const std::filesystem::path& dir) = 0;
    /// mkdir -p.
    [[nodiscard]] virtual Status create_directories(const std::filesystem::path& dir) = 0;
    /// fsync(2) of the directory itself, so created/removed entries survive a crash.
    [[nodiscard]] virtual Status sync_directory(const std::filesystem::path& dir) = 0;
};

/// The real file system (open/pwrite/pread/fdatasync/ftruncate/unlink, O_CLOEXEC everywhere;
/// open_direct adds O_DIRECT and takes its alignment from statx(STATX_DIOALIGN)).
/// One process-wide instance; stateless.
FileSystem& posix_file_system();

}  // namespace queen::log
