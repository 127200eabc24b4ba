// modules/log/tests/faulty_file_system.hpp — a FileSystem that forwards to POSIX and injects
// failures on demand: write errors, short writes, ENOSPC, fdatasync errors, directory errors,
// read errors; and measures reads.
#pragma once

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <memory>
#include <string>

#include "queen/log/file.hpp"

namespace queen::log::testing {

/// Which faults to inject. Counters count down: the Nth matching call (1 = the next one) fails,
/// and with `sticky` every later one too. All fields are atomics so tests can arm them while the
/// log's writer thread runs.
struct Faults {
    std::atomic<int> fail_write_after{0};  ///< 0 = off
    std::atomic<int> write_errno{EIO};
    std::atomic<int> fail_sync_after{0};  ///< fdatasync
    std::atomic<int> sync_errno{EIO};
    std::atomic<bool> short_writes{false};  ///< every write writes at most 7 bytes
    std::atomic<bool> fail_sync_directory{false};
    std::atomic<bool> fail_create{false};           ///< open(create_exclusive) fails with ENOSPC
    std::atomic<bool> refuse_direct{false};         ///< open_direct fails with Errc::unsupported
    std::atomic<bool> refuse_direct_writes{false};  ///< direct writes fail as EINVAL does
    std::atomic<int> writes{0};                     ///< write_at calls seen
    std::atomic<int> direct_writes{0};              ///< of them, on files from open_direct
    std::atomic<int> syncs{0};                      ///< sync_data calls seen
    std::atomic<int> fail_read_after{0};            ///< read_at
    std::atomic<std::uint64_t> largest_read{0};     ///< the longest read_at asked for, in bytes
};

namespace detail {
inline bool fires(std::atomic<int>& countdown) {
    int value = countdown.load();
    while (value > 0) {
        if (countdown.compare_exchange_weak(value, value - 1)) {
            return value == 1;
        }
    }
    return false;
}
}  // namespace detail

class FaultyFile final : public File {
public:
    FaultyFile(std::unique_ptr<File> inner, Faults& faults)
        : inner_(std::move(inner)), faults_(faults) {}
    Result<std::size_t> write_at(std::uint64_t offset, ByteSpan data) override {
        ++faults_.writes;
        // A direct file takes whole blocks only, as O_DIRECT does.
        const std::size_t block = std::max<std::size_t>(inner_->direct_alignment(), 1);
        if (block > 1) {
            ++faults_.direct_writes;
            if (faults_.refuse_direct_writes.load()) {
                return Error{Errc::unsupported, "direct pwrite refused (EINVAL, injected)"};
            }
        }
        if (detail::fires(faults_.fail_write_after)) {
            // Like a real failing write, part of the data may have reached the file.
            const std::size_t part = data.size() / 2 / block * block;
            if (part > 0) {
                (void)inner_->write_at(offset, data.first(part));
            }
            return errno_error(faults_.write_errno.load(), "pwrite (injected)");
        }
        const std::size_t short_size = std::max<std::size_t>(7 / block * block, block);
        if (faults_.short_writes.load() && data.size() > short_size) {
            data = data.first(short_size);
        }
        return inner_->write_at(offset, data);
    }
    Result<std::size_t> read_at(std::uint64_t offset, MutableByteSpan out) const override {
        std::uint64_t largest = faults_.largest_read.load();
        while (out.size() > largest &&
               !faults_.largest_read.compare_exchange_weak(largest, out.size())) {
        }
        if (detail::fires(faults_.fail_read_after)) {
            return errno_error(EIO, "pread (injected)");
        }
        return inner_->read_at(offset, out);
    }
    Status sync_data() override {
        ++faults_.syncs;
        if (detail::fires(faults_.fail_sync_after)) {
            return errno_error(faults_.sync_errno.load(), "fdatasync (injected)");
        }
        return inner_->sync_data();
    }
    Status truncate(std::uint64_t size) override { return inner_->truncate(size); }
    Result<std::uint64_t> size() const override { return inner_->size(); }
    std::size_t direct_alignment() const noexcept override { return inner_->direct_alignment(); }

private:
    std::unique_ptr<File> inner_;
    Faults& faults_;
};

class FaultyFileSystem final : public FileSystem {
public:
    explicit FaultyFileSystem(Faults& faults) : faults_(faults) {}
    Result<std::unique_ptr<File>> open(const std::filesystem::path& path, OpenMode mode) override {
        if (mode == OpenMode::create_exclusive && faults_.fail_create.load()) {
            return errno_error(ENOSPC, "open " + path.string() + " (injected)");
        }
        QUEEN_TRY(std::unique_ptr<File> inner, posix_file_system().open(path, mode));
        return std::unique_ptr<File>(std::make_unique<FaultyFile>(std::move(inner), faults_));
    }
    Result<std::unique_ptr<File>> open_direct(const std::filesystem::path& path) override {
        if (faults_.refuse_direct.load()) {
            return Error{Errc::unsupported, "direct I/O on " + path.string() + " (injected)"};
        }
        QUEEN_TRY(std::unique_ptr<File> inner, posix_file_system().open_direct(path));
        return std::unique_ptr<File>(std::make_unique<FaultyFile>(std::move(inner), faults_));
    }
    Status remove(const std::filesystem::path& path) override {
        return posix_file_system().remove(path);
    }
    Result<std::vector<std::string>> list(const std::filesystem::path& dir) override {
        return posix_file_system().list(dir);
    }
    Status create_directories(const std::filesystem::path& dir) override {
        return posix_file_system().create_directories(dir);
    }
    Status sync_directory(const std::filesystem::path& dir) override {
        if (faults_.fail_sync_directory.load()) {
            return errno_error(EIO, "fsync directory (injected)");
        }
        return posix_file_system().sync_directory(dir);
    }

private:
    Faults& faults_;
};

}  // namespace queen::log::testing
