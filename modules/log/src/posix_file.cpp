// modules/log/src/posix_file.cpp — FileSystem over POSIX calls; every error names the path.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "queen/log/file.hpp"

namespace queen::log {
namespace {

Error path_error(int errno_value, const char* call, const std::filesystem::path& path) {
    return errno_error(errno_value, std::string(call) + " " + path.string());
}

/// The error of a failed call that names a file: a missing or an existing one get their codes.
Error file_error(int errno_value, const char* call, const std::filesystem::path& path) {
    if (errno_value == ENOENT) {
        return Error{Errc::not_found, std::string(call) + " " + path.string()};
    }
    if (errno_value == EEXIST) {
        return Error{Errc::already_exists, std::string(call) + " " + path.string()};
    }
    return path_error(errno_value, call, path);
}

class PosixFile final : public File {
public:
    PosixFile(int fd, std::filesystem::path path, std::size_t direct_alignment = 0)
        : fd_(fd), path_(std::move(path)), direct_alignment_(direct_alignment) {}
    ~PosixFile() override { ::close(fd_); }
    PosixFile(const PosixFile&) = delete;
    PosixFile& operator=(const PosixFile&) = delete;

    Result<std::size_t> write_at(std::uint64_t offset, ByteSpan data) override {
        for (;;) {
            const ssize_t n = ::pwrite(fd_, data.data(), data.size(), static_cast<off_t>(offset));
            if (n >= 0) {
                if (n == 0 && !data.empty()) {
                    return Error{Errc::io, "pwrite " + path_.string() + " wrote 0 bytes"};
                }
                return static_cast<std::size_t>(n);
            }
            if (errno == EINVAL && direct_alignment_ != 0) {
                // O_DIRECT refused this write (alignment or file system); nothing was written.
                return Error{Errc::unsupported,
                             "direct pwrite " + path_.string() + " refused (EINVAL)"};
            }
            if (errno != EINTR) {
                return path_error(errno, "pwrite", path_);
            }
        }
    }
    Result<std::size_t> read_at(std::uint64_t offset, MutableByteSpan out) const override {
        for (;;) {
            const ssize_t n = ::pread(fd_, out.data(), out.size(), static_cast<off_t>(offset));
            if (n >= 0) {
                return static_cast<std::size_t>(n);
            }
            if (errno != EINTR) {
                return path_error(errno, "pread", path_);
            }
        }
    }
    Status sync_data() override {
        if (::fdatasync(fd_) != 0) {
            return path_error(errno, "fdatasync", path_);
        }
        return {};
    }
    Status truncate(std::uint64_t size) override {
        if (::ftruncate(fd_, static_cast<off_t>(size)) != 0) {
            return path_error(errno, "ftruncate", path_);
        }
        return {};
    }
    Result<std::uint64_t> size() const override {
        struct stat info {};
        if (::fstat(fd_, &info) != 0) {
            return path_error(errno, "fstat", path_);
        }
        return static_cast<std::uint64_t>(info.st_size);
    }
    std::size_t direct_alignment() const noexcept override { return direct_alignment_; }

private:
    int fd_;
    std::filesystem::path path_;
    std::size_t direct_alignment_;
};

/// Direct writes are aligned to at least a page, which every block device we expect accepts.
constexpr std::size_t direct_alignment_min = 4096;

class PosixFileSystem final : public FileSystem {
public:
    Result<std::unique_ptr<File>> open(const std::filesystem::path& path, OpenMode mode) override {
        int flags = O_CLOEXEC;
        switch (mode) {
            case OpenMode::read_only: flags |= O_RDONLY; break;
            case OpenMode::read_write: flags |= O_RDWR; break;
            case OpenMode::create_exclusive: flags |= O_RDWR | O_CREAT | O_EXCL; break;
        }
        const int fd = ::open(path.c_str(), flags, 0644);
        if (fd < 0) {
            return file_error(errno, "open", path);
        }
        return std::unique_ptr<File>(std::make_unique<PosixFile>(fd, path));
    }
    Result<std::unique_ptr<File>> open_direct(const std::filesystem::path& path) override {
        std::size_t alignment = direct_alignment_min;
        struct statx info {};
        if (::statx(AT_FDCWD, path.c_str(), 0, STATX_DIOALIGN, &info) != 0) {
            return file_error(errno, "statx", path);
        }
        if ((info.stx_mask & STATX_DIOALIGN) != 0) {
            // Reported (Linux 6.1+ on ext4, xfs, btrfs, block devices): 0 means no direct I/O.
            if (info.stx_dio_offset_align == 0) {
                return Error{Errc::unsupported, "direct I/O on " + path.string() +
                                                    ": the file system does not support it"};
            }
            alignment = std::max<std::size_t>(
                {alignment, info.stx_dio_offset_align, info.stx_dio_mem_align});
        }
        const int fd = ::open(path.c_str(), O_WRONLY | O_DIRECT | O_CLOEXEC);
        if (fd < 0) {
            const int saved = errno;
            if (saved == EINVAL) {
                return Error{Errc::unsupported, "open O_DIRECT " + path.string()};
            }
            return file_error(saved, "open O_DIRECT", path);
        }
        return std::unique_ptr<File>(std::make_unique<PosixFile>(fd, path, alignment));
    }
    Status remove(const std::filesystem::path& path) override {
        if (::unlink(path.c_str()) != 0) {
            return file_error(errno, "unlink", path);
        }
        return {};
    }
    Result<std::vector<std::string>> list(const std::filesystem::path& dir) override {
        DIR* handle = ::opendir(dir.c_str());
        if (handle == nullptr) {
            return file_error(errno, "opendir", dir);
        }
        std::vector<std::string> names;
        errno = 0;
        while (const dirent* entry = ::readdir(handle)) {
            const std::string_view name = entry->d_name;
            if (name != "." && name != "..") {
                names.emplace_back(name);
            }
        }
        const int saved = errno;
        ::closedir(handle);
        if (saved != 0) {
            return path_error(saved, "readdir", dir);
        }
        return names;
    }
    Status create_directories(const std::filesystem::path& dir) override {
        std::error_code error;
        std::filesystem::create_directories(dir, error);
        if (error) {
            return errno_error(error.value(), "mkdir -p " + dir.string());
        }
        return {};
    }
    Status sync_directory(const std::filesystem::path& dir) override {
        const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) {
            return path_error(errno, "open directory", dir);
        }
        const int rc = ::fsync(fd);
        const int saved = errno;
        ::close(fd);
        if (rc != 0) {
            return path_error(saved, "fsync directory", dir);
        }
        return {};
    }
};

}  // namespace

FileSystem& posix_file_system() {
    static PosixFileSystem instance;
    return instance;
}

}  // namespace queen::log
