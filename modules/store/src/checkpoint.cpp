// modules/store/src/checkpoint.cpp — SyncMode::checkpoint: power-loss-safe LMDB without an
// fdatasync per commit (modules/store/README.md, "Checkpoints").
//
// Commits run with MDB_NOSYNC, so after a power loss data.mdb may hold any mix of the pages
// written since the last flush, including a meta page that points at pages that never reached
// the disk. A checkpoint makes one snapshot safe to come back to: its pages are flushed and a
// read txn keeps them from being reused, and its meta page is saved aside. Opening puts that
// meta page back, so LMDB sees exactly the checkpointed tree, whose pages are all on disk.
#include <fcntl.h>
#include <lmdb.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <string>

#include "queen/core/crc32c.hpp"
#include "state.hpp"

namespace queen::store::detail {
namespace {

constexpr std::string_view checkpoint_name = "checkpoint.meta";
constexpr std::string_view checkpoint_temp_name = "checkpoint.meta.tmp";
constexpr std::array<char, 8> checkpoint_magic = {'Q', 'N', 'C', 'K', 'P', 'T', '1', '\n'};
// checkpoint.meta: magic, page size (u32 LE), txn id (u64 LE), the meta page, CRC-32C (u32 LE)
// of everything before it.
constexpr std::size_t checkpoint_header_size = checkpoint_magic.size() + 4 + 8;

// LMDB 0.9 on-disk meta page (mdb.c): a 16-byte page header (pgno u64, pad u16, flags u16,
// u32), then MDB_meta: magic u32, version u32, address, mapsize, two 48-byte MDB_db, last
// page u64, txn id u64.
constexpr std::size_t page_pgno_offset = 0;
constexpr std::size_t page_flags_offset = 10;
constexpr std::uint16_t page_flag_meta = 0x08;
constexpr std::size_t meta_magic_offset = 16;
constexpr std::uint32_t meta_magic = 0xBEEFC0DE;
constexpr std::size_t meta_last_page_offset = 16 + 120;
constexpr std::size_t meta_txn_id_offset = 16 + 128;
constexpr std::size_t meta_size = meta_txn_id_offset + 8;

template <class T>
T load(const Bytes& bytes, std::size_t at) {
    T value{};
    std::memcpy(&value, bytes.data() + at, sizeof(T));  // LMDB writes host order (x86: LE)
    return value;
}
template <class T>
void store(Bytes& bytes, std::size_t at, T value) {
    std::memcpy(bytes.data() + at, &value, sizeof(T));
}

/// Closes a file descriptor on scope exit.
class Fd {
public:
    explicit Fd(int fd) noexcept : fd_(fd) {}
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    ~Fd() {
        if (fd_ >= 0) {
            ::close(fd_);
        }
    }
    [[nodiscard]] int get() const noexcept { return fd_; }

private:
    int fd_;
};

queen::Error errno_error(int error, const std::string& what) {
    return lmdb_error(error, what);
}

queen::Result<void> read_exact(int fd, Bytes& out, std::size_t size, std::uint64_t offset,
                               const std::string& what) {
    out.resize(size);
    std::size_t done = 0;
    while (done < size) {
        const ssize_t got =
            ::pread(fd, out.data() + done, size - done, static_cast<off_t>(offset + done));
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got < 0) {
            return errno_error(errno, what);
        }
        if (got == 0) {
            return queen::Error{Errc::corruption, what + ": file ends after " +
                                                      std::to_string(offset + done) + " bytes"};
        }
        done += static_cast<std::size_t>(got);
    }
    return {};
}

queen::Result<void> write_exact(int fd, ByteSpan bytes, std::uint64_t offset,
                                const std::string& what) {
    std::size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t wrote = ::pwrite(fd, bytes.data() + done, bytes.size() - done,
                                       static_cast<off_t>(offset + done));
        if (wrote < 0 && errno == EINTR) {
            continue;
        }
        if (wrote < 0) {
            return errno_error(errno, what);
        }
        done += static_cast<std::size_t>(wrote);
    }
    return {};
}

queen::Result<void> sync_directory(const std::filesystem::path& dir) {
    const Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (fd.get() < 0) {
        return errno_error(errno, "checkpoint: opening " + dir.string());
    }
    if (::fsync(fd.get()) != 0) {
        return errno_error(errno, "checkpoint: fsync of " + dir.string());
    }
    return {};
}

std::uint64_t page_txn_id(const Bytes& page) {
    return load<std::uint64_t>(page, meta_txn_id_offset);
}

bool is_meta_page(const Bytes& page) {
    return page.size() >= meta_size && load<std::uint32_t>(page, meta_magic_offset) == meta_magic &&
           (load<std::uint16_t>(page, page_flags_offset) & page_flag_meta) != 0;
}

/// The meta page (of the two in data.mdb) that describes txn `txn_id`.
queen::Result<Bytes> read_meta_page(int fd, std::uint32_t page_size, std::uint64_t txn_id,
                                    const std::filesystem::path& dir) {
    Bytes both;
    QUEEN_TRY(read_exact(fd, both, std::size_t{page_size} * 2, 0,
                         "checkpoint: reading the meta pages of " + dir.string()));
    for (std::size_t slot = 0; slot < 2; ++slot) {
        Bytes page(both.begin() + static_cast<std::ptrdiff_t>(slot * page_size),
                   both.begin() + static_cast<std::ptrdiff_t>((slot + 1) * page_size));
        if (is_meta_page(page) && page_txn_id(page) == txn_id) {
            return page;
        }
    }
    return queen::Error{Errc::corruption, "checkpoint: no meta page of " + dir.string() +
                                              " describes txn " + std::to_string(txn_id)};
}

queen::Result<void> save_checkpoint(const std::filesystem::path& dir, const Bytes& page,
                                    std::uint64_t txn_id) {
    Bytes content;
    content.reserve(checkpoint_header_size + page.size() + 4);
    ByteWriter writer(content);
    writer.raw(as_bytes(std::string_view(checkpoint_magic.data(), checkpoint_magic.size())));
    writer.fixed<std::uint32_t>(static_cast<std::uint32_t>(page.size()));
    writer.fixed<std::uint64_t>(txn_id);
    writer.raw(page);
    writer.fixed<std::uint32_t>(crc32c(content));

    const auto temp = dir / checkpoint_temp_name;
    const std::string what = "checkpoint: writing " + temp.string();
    {
        const Fd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
        if (fd.get() < 0) {
            return errno_error(errno, what);
        }
        QUEEN_TRY(write_exact(fd.get(), content, 0, what));
        if (::fdatasync(fd.get()) != 0) {
            return errno_error(errno, what + ": fdatasync");
        }
    }
    const auto target = dir / checkpoint_name;
    if (::rename(temp.c_str(), target.c_str()) != 0) {
        return errno_error(errno, "checkpoint: renaming to " + target.string());
    }
    return sync_directory(dir);
}

}  // namespace

queen::Result<void> EnvState::checkpoint() {
    const std::lock_guard lock(checkpoint_mutex);
    QUEEN_TRY(check_poisoned());
    int fd = -1;
    if (const int rc = mdb_env_get_fd(env, &fd); rc != MDB_SUCCESS) {
        return lmdb_error(rc, "checkpoint " + path.string());
    }
    // With the writer role no commit is in flight: the new read txn sees the last committed
    // txn, and that txn's meta page is still in its slot (the next commit but one reuses it).
    enter(true);
    MDB_txn* next_pin = nullptr;
    int rc = mdb_txn_begin(env, nullptr, MDB_RDONLY, &next_pin);
    std::uint64_t txn_id = 0;
    queen::Result<Bytes> page = Bytes{};
    if (rc == MDB_SUCCESS) {
        txn_id = mdb_txn_id(next_pin);
        if (pin == nullptr || txn_id != pinned_txn_id) {
            page = read_meta_page(fd, page_size, txn_id, path);
        }
    }
    leave(true);
    if (rc != MDB_SUCCESS) {
        return lmdb_error(rc, "checkpoint " + path.string() + ": pinning the last snapshot");
    }
    if (pin != nullptr && txn_id == pinned_txn_id) {
        mdb_txn_abort(next_pin);  // nothing committed since the last checkpoint
        return {};
    }
    if (!page) {
        mdb_txn_abort(next_pin);
        return poison(page.error());
    }
    // Every page of the pinned snapshot was written before this point and no later txn may
    // overwrite one of them, so after the flush the snapshot is whole on disk.
    rc = mdb_env_sync(env, 1);
    if (rc != MDB_SUCCESS) {
        mdb_txn_abort(next_pin);
        return poison(lmdb_error(rc, "checkpoint " + path.string() + ": fdatasync"));
    }
    if (auto saved = save_checkpoint(path, *page, txn_id); !saved) {
        mdb_txn_abort(next_pin);
        return poison(saved.error());
    }
    // checkpoint.meta now names the new snapshot: the old one may be reused.
    if (pin != nullptr) {
        mdb_txn_abort(pin);
    }
    pin = next_pin;
    pinned_txn_id = txn_id;
    return {};
}

queen::Result<void> restore_checkpoint(const std::filesystem::path& dir) {
    const auto checkpoint_path = dir / checkpoint_name;
    const auto data_path = dir / "data.mdb";
    std::error_code ec;
    std::filesystem::remove(dir / checkpoint_temp_name, ec);  // an unfinished checkpoint
    if (!std::filesystem::exists(checkpoint_path, ec)) {
        return {};
    }
    if (!std::filesystem::exists(data_path, ec)) {
        // The data file was removed (a reset): its checkpoint describes nothing.
        if (!std::filesystem::remove(checkpoint_path, ec) && ec) {
            return errno_error(ec.value(), "removing " + checkpoint_path.string());
        }
        return {};
    }
    const std::string damaged = checkpoint_path.string() + " is damaged";
    Bytes content;
    {
        const Fd fd(::open(checkpoint_path.c_str(), O_RDONLY | O_CLOEXEC));
        if (fd.get() < 0) {
            return errno_error(errno, "opening " + checkpoint_path.string());
        }
        struct stat info {};
        if (::fstat(fd.get(), &info) != 0) {
            return errno_error(errno, "stat " + checkpoint_path.string());
        }
        const auto size = static_cast<std::size_t>(info.st_size);
        if (size < checkpoint_header_size + meta_size + 4 || size > (std::size_t{1} << 20)) {
            return queen::Error{Errc::corruption, damaged + " (size " + std::to_string(size) + ")"};
        }
        QUEEN_TRY(read_exact(fd.get(), content, size, 0, "reading " + checkpoint_path.string()));
    }
    const std::size_t body = content.size() - 4;
    if (load<std::uint32_t>(content, body) != crc32c(ByteSpan(content.data(), body)) ||
        std::memcmp(content.data(), checkpoint_magic.data(), checkpoint_magic.size()) != 0) {
        return queen::Error{Errc::corruption, damaged + " (checksum or magic)"};
    }
    const auto page_size = load<std::uint32_t>(content, checkpoint_magic.size());
    const auto txn_id = load<std::uint64_t>(content, checkpoint_magic.size() + 4);
    if (body != checkpoint_header_size + page_size) {
        return queen::Error{Errc::corruption, damaged + " (page size)"};
    }
    const Bytes saved(content.begin() + static_cast<std::ptrdiff_t>(checkpoint_header_size),
                      content.begin() + static_cast<std::ptrdiff_t>(body));
    const auto slot = load<std::uint64_t>(saved, page_pgno_offset);
    if (!is_meta_page(saved) || page_txn_id(saved) != txn_id || slot > 1) {
        return queen::Error{Errc::corruption, damaged + " (not a meta page)"};
    }

    const Fd fd(::open(data_path.c_str(), O_RDWR | O_CLOEXEC));
    if (fd.get() < 0) {
        return errno_error(errno, "opening " + data_path.string());
    }
    struct stat info {};
    if (::fstat(fd.get(), &info) != 0) {
        return errno_error(errno, "stat " + data_path.string());
    }
    const std::uint64_t needed =
        (load<std::uint64_t>(saved, meta_last_page_offset) + 1) * page_size;
    if (static_cast<std::uint64_t>(info.st_size) < needed) {
        return queen::Error{Errc::corruption, data_path.string() + " has " +
                                                  std::to_string(info.st_size) +
                                                  " bytes, the checkpointed snapshot needs " +
                                                  std::to_string(needed)};
    }
    // The other slot gets the same tree as the txn before it, so LMDB picks the saved one.
    Bytes other = saved;
    store<std::uint64_t>(other, page_pgno_offset, 1 - slot);
    store<std::uint64_t>(other, meta_txn_id_offset, txn_id == 0 ? 0 : txn_id - 1);

    Bytes current;
    QUEEN_TRY(read_exact(fd.get(), current, std::size_t{page_size} * 2, 0,
                         "reading the meta pages of " + data_path.string()));
    const auto in_slot = [&](std::uint64_t index) {
        return Bytes(current.begin() + static_cast<std::ptrdiff_t>(index * page_size),
                     current.begin() + static_cast<std::ptrdiff_t>((index + 1) * page_size));
    };
    const Bytes current_other = in_slot(1 - slot);
    if (in_slot(slot) == saved && is_meta_page(current_other) &&
        page_txn_id(current_other) < txn_id) {
        return {};  // closed cleanly after this checkpoint: the file already says so
    }
    const std::string what = "restoring the checkpointed meta page into " + data_path.string();
    QUEEN_TRY(write_exact(fd.get(), saved, slot * page_size, what));
    QUEEN_TRY(write_exact(fd.get(), other, (1 - slot) * page_size, what));
    if (::fdatasync(fd.get()) != 0) {
        return errno_error(errno, what + ": fdatasync");
    }
    return {};
}

queen::Result<void> remove_checkpoint(const std::filesystem::path& dir) {
    const auto checkpoint_path = dir / checkpoint_name;
    std::error_code ec;
    if (!std::filesystem::remove(checkpoint_path, ec)) {
        return ec ? errno_error(ec.value(), "removing " + checkpoint_path.string())
                  : queen::Result<void>{};
    }
    return sync_directory(dir);
}

}  // namespace queen::store::detail
