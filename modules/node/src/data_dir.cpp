// modules/node/src/data_dir.cpp — data directory lock, durable file writes and node.toml.
#include "data_dir.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>

#include "queen/config/schema.hpp"

namespace queen::node::detail {
namespace {
Status fsync_path(const std::filesystem::path& path, int flags) {
    const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
    if (fd < 0) {
        return errno_error(errno, "open " + path.string());
    }
    const int rc = ::fsync(fd);
    const int saved = errno;
    ::close(fd);
    if (rc != 0) {
        return errno_error(saved, "fsync " + path.string());
    }
    return {};
}
}  // namespace

Result<DataDirLock> DataDirLock::acquire(const std::filesystem::path& data_dir) {
    const auto path = data_dir / "LOCK";
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        return errno_error(errno, "open " + path.string());
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
        const int saved = errno;
        ::close(fd);
        if (saved == EWOULDBLOCK) {
            return Error{Errc::busy, "another queen process is using " + data_dir.string()};
        }
        return errno_error(saved, "flock " + path.string());
    }
    return DataDirLock(fd);
}

DataDirLock::DataDirLock(DataDirLock&& other) noexcept : fd_(other.fd_) {
    other.fd_ = -1;
}
DataDirLock& DataDirLock::operator=(DataDirLock&& other) noexcept {
    if (this != &other) {
        if (fd_ >= 0) {
            ::close(fd_);
        }
        fd_ = other.fd_;
        other.fd_ = -1;
    }
    return *this;
}
DataDirLock::~DataDirLock() {
    if (fd_ >= 0) {
        ::close(fd_);
    }
}

Status create_directories_durably(const std::filesystem::path& dir) {
    std::vector<std::filesystem::path> created;
    for (auto p = dir; !p.empty() && !std::filesystem::exists(p); p = p.parent_path()) {
        created.push_back(p);
        if (p == p.parent_path()) {
            break;
        }
    }
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) {
        return errno_error(ec.value(), "mkdir " + dir.string());
    }
    for (const auto& p : created) {
        auto parent = p.parent_path();
        QUEEN_TRY(fsync_path(parent.empty() ? "." : parent, O_RDONLY | O_DIRECTORY));
    }
    return {};
}

Status remove_file_durably(const std::filesystem::path& path) {
    std::error_code ec;
    if (!std::filesystem::remove(path, ec) && ec) {
        return Error{Errc::io, "remove " + path.string() + ": " + ec.message()};
    }
    const auto parent = path.parent_path();
    return fsync_path(parent.empty() ? "." : parent, O_RDONLY | O_DIRECTORY);
}

Status remove_tree_durably(const std::filesystem::path& path) {
    std::error_code ec;
    const auto removed = std::filesystem::remove_all(path, ec);
    if (ec) {
        return Error{Errc::io, "remove " + path.string() + ": " + ec.message()};
    }
    if (removed == 0) {
        return {};  // nothing was there: no directory entry changed (every tenant's start)
    }
    const auto parent = path.parent_path();
    return fsync_path(parent.empty() ? "." : parent, O_RDONLY | O_DIRECTORY);
}

Status rename_durably(const std::filesystem::path& from, const std::filesystem::path& to) {
    if (::rename(from.c_str(), to.c_str()) != 0) {
        return errno_error(errno, "rename " + from.string() + " to " + to.string());
    }
    const auto to_parent = to.parent_path().empty() ? std::filesystem::path(".") : to.parent_path();
    const auto from_parent =
        from.parent_path().empty() ? std::filesystem::path(".") : from.parent_path();
    QUEEN_TRY(fsync_path(to_parent, O_RDONLY | O_DIRECTORY));
    if (from_parent != to_parent) {
        QUEEN_TRY(fsync_path(from_parent, O_RDONLY | O_DIRECTORY));
    }
    return {};
}

Status sync_path(const std::filesystem::path& path) {
    std::error_code ec;
    const bool is_directory = std::filesystem::is_directory(path, ec);
    return fsync_path(path, is_directory ? O_RDONLY | O_DIRECTORY : O_RDONLY);
}

Status write_file_durably(const std::filesystem::path& path, std::string_view contents,
                          mode_t mode) {
    const auto temp = path.string() + ".tmp";
    // A temp file left by a crash would keep its old mode through O_TRUNC: start from none.
    if (::unlink(temp.c_str()) != 0 && errno != ENOENT) {
        return errno_error(errno, "unlink " + temp);
    }
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0) {
        return errno_error(errno, "open " + temp);
    }
    std::size_t written = 0;
    while (written < contents.size()) {
        const ssize_t n = ::write(fd, contents.data() + written, contents.size() - written);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            const int saved = errno;
            ::close(fd);
            return errno_error(saved, "write " + temp);
        }
        written += static_cast<std::size_t>(n);
    }
    if (::fsync(fd) != 0) {
        const int saved = errno;
        ::close(fd);
        return errno_error(saved, "fsync " + temp);
    }
    ::close(fd);
    if (::rename(temp.c_str(), path.c_str()) != 0) {
        return errno_error(errno, "rename " + temp);
    }
    auto parent = path.parent_path();
    return fsync_path(parent.empty() ? "." : parent, O_RDONLY | O_DIRECTORY);
}

Result<NodeIdentity> load_or_create_identity(const std::filesystem::path& data_dir,
                                             std::uint64_t node_id, std::uint64_t random_bits) {
    const auto path = data_dir / "node.toml";
    NodeIdentity identity;
    if (std::filesystem::exists(path)) {
        config::Schema schema;
        schema.add_integer("format_version", &identity.format_version, "node.toml format version",
                           1, 1);
        schema.add_integer("node_id", &identity.node_id, "this node's id", 1);
        schema.add_string("cluster_id", &identity.cluster_id, "the cluster this node belongs to");
        if (auto loaded = schema.load_file(path); !loaded) {
            return Error{Errc::corruption, loaded.error().message()};
        }
        if (identity.node_id == 0 || identity.cluster_id.size() != 32) {
            return Error{Errc::corruption, path.string() + ": missing node_id or cluster_id"};
        }
        if (identity.node_id != node_id) {
            return Error{Errc::invalid_argument, path.string() + " belongs to node " +
                                                     std::to_string(identity.node_id) +
                                                     ", not node " + std::to_string(node_id)};
        }
        return identity;
    }
    identity.node_id = node_id;
    char hex[33];
    std::snprintf(hex, sizeof hex, "%016llx%016llx", static_cast<unsigned long long>(random_bits),
                  static_cast<unsigned long long>(random_bits * 0x9e3779b97f4a7c15ULL ^ node_id));
    identity.cluster_id = hex;
    std::ostringstream text;
    text << "# node.toml — identity of this node, written at first start. Do not edit.\n"
         << "format_version = 1\n"
         << "node_id = " << identity.node_id << "\n"
         << "cluster_id = \"" << identity.cluster_id << "\"\n";
    QUEEN_TRY(write_file_durably(path, text.str()));
    return identity;
}

}  // namespace queen::node::detail
