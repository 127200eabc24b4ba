// modules/node/src/snapshot.cpp — state copies sent to followers and pulled by them.
#include "snapshot.hpp"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <vector>

#include "data_dir.hpp"
#include "queen/log/file.hpp"

namespace queen::node::detail {

namespace {

constexpr std::uint64_t request_size = 24;
constexpr std::uint64_t chunk_header_size = 8 + 1 + 8 + 8;

Error bad_frame(const char* what) {
    return Error{Errc::corruption, std::string("snapshot frame: ") + what};
}

std::filesystem::path session_dir(const std::filesystem::path& dir, NodeId peer,
                                  std::uint64_t session) {
    return dir / (std::to_string(peer.value()) + "-" + std::to_string(session));
}

}  // namespace

void encode_snapshot_request(const SnapshotRequest& request, Bytes& out) {
    ByteWriter writer(out);
    writer.fixed<std::uint64_t>(request.session);
    writer.fixed<std::uint64_t>(request.index.value());
    writer.fixed<std::uint64_t>(request.offset);
}

Result<SnapshotRequest> decode_snapshot_request(ByteSpan bytes) {
    if (bytes.size() != request_size) {
        return bad_frame("request size");
    }
    ByteReader reader(bytes);
    SnapshotRequest request;
    request.session = reader.fixed<std::uint64_t>();
    request.index = LogIndex{reader.fixed<std::uint64_t>()};
    request.offset = reader.fixed<std::uint64_t>();
    return request;
}

void encode_snapshot_chunk(const SnapshotChunk& chunk, Bytes& out) {
    ByteWriter writer(out);
    writer.fixed<std::uint64_t>(chunk.session);
    writer.u8(static_cast<std::uint8_t>(chunk.status));
    writer.fixed<std::uint64_t>(chunk.offset);
    writer.fixed<std::uint64_t>(chunk.total);
    out.insert(out.end(), chunk.data.begin(), chunk.data.end());
}

Result<SnapshotChunk> decode_snapshot_chunk(ByteSpan bytes) {
    if (bytes.size() < chunk_header_size) {
        return bad_frame("short chunk");
    }
    ByteReader reader(bytes);
    SnapshotChunk chunk;
    chunk.session = reader.fixed<std::uint64_t>();
    const std::uint8_t status = reader.u8();
    if (status > static_cast<std::uint8_t>(ChunkStatus::failed)) {
        return bad_frame("chunk status");
    }
    chunk.status = static_cast<ChunkStatus>(status);
    chunk.offset = reader.fixed<std::uint64_t>();
    chunk.total = reader.fixed<std::uint64_t>();
    chunk.data = bytes.subspan(chunk_header_size);
    if (chunk.offset > chunk.total || chunk.data.size() > chunk.total - chunk.offset) {
        return bad_frame("chunk beyond its total");
    }
    return chunk;
}

// -- the leader's side --------------------------------------------------------------------------

struct SnapshotSource::Session {
    std::uint64_t id = 0;
    LogIndex index;
    std::filesystem::path dir;
    bool is_copied = false;
    bool is_failed = false;
    bool is_sent = false;  // the last chunk went out
    std::uint64_t size = 0;
    std::unique_ptr<log::File> file;  // data.mdb of the copy, once copied
    std::int64_t used_ms = 0;         // monotonic, last request
};

SnapshotSource::SnapshotSource(std::filesystem::path dir, Copy copy, Applied applied, Send send,
                               const Clock& clock, Logger& logger)
    : dir_(std::move(dir)),
      copy_(std::move(copy)),
      applied_(std::move(applied)),
      send_(std::move(send)),
      clock_(clock),
      logger_(logger) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
}

SnapshotSource::~SnapshotSource() {
    stop();
}

void SnapshotSource::answer(NodeId to, const SnapshotChunk& chunk) {
    Bytes body;
    body.reserve(chunk_header_size + chunk.data.size());
    encode_snapshot_chunk(chunk, body);
    send_(to, body);
}

void SnapshotSource::on_request(NodeId from, ByteSpan body) {
    auto request = decode_snapshot_request(body);
    if (!request) {
        QUEEN_LOG(logger_, Level::warn, "snapshot.bad_request",
                  "peer=" << from << " error=\"" << request.error().message() << "\"");
        return;
    }
    SnapshotChunk chunk;
    chunk.session = request->session;
    std::shared_ptr<Session> session;
    {
        std::lock_guard lock(mutex_);
        if (is_stopping_) {
            return;
        }
        auto found = sessions_.find(from);
        if (found == sessions_.end() || found->second->id != request->session) {
            if (request->offset != 0) {
                chunk.status = ChunkStatus::unknown_session;
            } else if (applied_() < request->index) {
                chunk.status = ChunkStatus::behind;
            } else {
                // A new session replaces the follower's earlier one (the copy thread removes
                // the files of sessions no longer listed).
                auto created = std::make_shared<Session>();
                created->id = request->session;
                created->index = request->index;
                created->dir = session_dir(dir_, from, request->session);
                created->used_ms = clock_.monotonic_ns() / 1'000'000;
                sessions_[from] = created;
                chunk.status = ChunkStatus::preparing;
                if (!thread_.joinable()) {
                    thread_ = std::thread([this] { run(); });
                }
                wakeup_.notify_all();
                QUEEN_LOG(logger_, Level::info, "snapshot.copy_requested",
                          "dir=" << dir_.parent_path().filename().string() << " peer=" << from
                                 << " index=" << request->index << " session=" << request->session);
            }
        } else {
            session = found->second;
            session->used_ms = clock_.monotonic_ns() / 1'000'000;
            if (session->is_failed) {
                chunk.status = ChunkStatus::failed;
                sessions_.erase(found);
                wakeup_.notify_all();
                session.reset();
            } else if (!session->is_copied) {
                chunk.status = ChunkStatus::preparing;
                session.reset();
            }
        }
    }
    if (!session) {
        answer(from, chunk);
        return;
    }
    // A copied session: the thread reads the chunk and answers.
    {
        std::lock_guard lock(mutex_);
        if (is_stopping_) {
            return;
        }
        reads_.push_back(Read{from, std::move(session), request->offset});
    }
    wakeup_.notify_all();
}

void SnapshotSource::serve(NodeId from, Session& session, std::uint64_t offset) {
    // The copy is immutable now: a pread, usually from the page cache.
    SnapshotChunk chunk;
    chunk.session = session.id;
    chunk.total = session.size;
    chunk.offset = std::min(offset, session.size);
    const std::uint64_t length = std::min(chunk_bytes, session.size - chunk.offset);
    Bytes data(length);
    std::uint64_t done = 0;
    while (done < length) {
        auto read = session.file->read_at(chunk.offset + done,
                                          std::span<Byte>(data.data() + done, length - done));
        if (!read || *read == 0) {
            QUEEN_LOG(logger_, Level::error, "snapshot.read_failed",
                      "peer=" << from << " error=\""
                              << (read ? std::string("short file") : read.error().message())
                              << "\"");
            chunk.status = ChunkStatus::failed;
            answer(from, chunk);
            return;
        }
        done += *read;
    }
    chunk.data = data;
    answer(from, chunk);
    std::lock_guard lock(mutex_);
    sent_bytes_total_ += length;
    if (chunk.offset + length == session.size && !session.is_sent) {
        session.is_sent = true;  // a last chunk asked for again is not another snapshot
        ++sent_total_;
        QUEEN_LOG(logger_, Level::info, "snapshot.sent",
                  "dir=" << dir_.parent_path().filename().string() << " peer=" << from
                         << " session=" << session.id << " bytes=" << session.size);
    }
}

void SnapshotSource::run() {
    std::unique_lock lock(mutex_);
    while (!is_stopping_) {
        // Chunks asked for first: a follower waits for each.
        if (!reads_.empty()) {
            Read read = std::move(reads_.front());
            reads_.pop_front();
            lock.unlock();
            serve(read.from, *read.session, read.offset);
            lock.lock();
            continue;
        }
        // Copy the sessions waiting for one, one at a time.
        std::shared_ptr<Session> next;
        for (const auto& [peer, session] : sessions_) {
            if (!session->is_copied && !session->is_failed) {
                next = session;
                break;
            }
        }
        if (next) {
            lock.unlock();
            const std::int64_t started_ns = clock_.monotonic_ns();
            std::error_code ec;
            std::filesystem::remove_all(next->dir, ec);
            Status copied = create_directories_durably(next->dir);
            if (copied) {
                copied = copy_(next->dir);
            }
            std::unique_ptr<log::File> file;
            std::uint64_t size = 0;
            if (copied) {
                auto opened =
                    log::posix_file_system().open(next->dir / "data.mdb", log::OpenMode::read_only);
                if (opened) {
                    file = std::move(*opened);
                    auto measured = file->size();
                    if (measured) {
                        size = *measured;
                    } else {
                        copied = measured.error();
                    }
                } else {
                    copied = opened.error();
                }
            }
            lock.lock();
            if (copied) {
                next->file = std::move(file);
                next->size = size;
                next->is_copied = true;
                QUEEN_LOG(logger_, Level::info, "snapshot.copied",
                          "dir=" << next->dir.string() << " bytes=" << size
                                 << " ms=" << (clock_.monotonic_ns() - started_ns) / 1'000'000);
            } else {
                next->is_failed = true;
                QUEEN_LOG(logger_, Level::error, "snapshot.copy_failed",
                          "dir=" << next->dir.string() << " error=\"" << copied.error().message()
                                 << "\"");
            }
            continue;
        }
        // Sessions idle too long go; then remove the copies no session holds.
        const std::int64_t now_ms = clock_.monotonic_ns() / 1'000'000;
        for (auto it = sessions_.begin(); it != sessions_.end();) {
            if (now_ms - it->second->used_ms > idle_timeout_ms) {
                it = sessions_.erase(it);
            } else {
                ++it;
            }
        }
        std::vector<std::filesystem::path> kept;
        for (const auto& [peer, session] : sessions_) {
            kept.push_back(session->dir.filename());
        }
        lock.unlock();
        std::error_code ec;
        for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
            if (std::find(kept.begin(), kept.end(), entry.path().filename()) == kept.end()) {
                std::filesystem::remove_all(entry.path(), ec);
            }
        }
        lock.lock();
        // A request that came while the files were removed is not missed.
        wakeup_.wait_for(lock, std::chrono::seconds(5), [&] {
            return is_stopping_ || !reads_.empty() ||
                   std::any_of(sessions_.begin(), sessions_.end(), [](const auto& entry) {
                       return !entry.second->is_copied && !entry.second->is_failed;
                   });
        });
    }
}

std::uint64_t SnapshotSource::sent_total() const {
    std::lock_guard lock(mutex_);
    return sent_total_;
}

std::uint64_t SnapshotSource::sent_bytes_total() const {
    std::lock_guard lock(mutex_);
    return sent_bytes_total_;
}

void SnapshotSource::stop() {
    {
        std::lock_guard lock(mutex_);
        if (is_stopping_ && !thread_.joinable()) {
            return;
        }
        is_stopping_ = true;
        sessions_.clear();
        reads_.clear();
    }
    wakeup_.notify_all();
    if (thread_.joinable()) {
        thread_.join();
    }
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
}

// -- the follower's side ------------------------------------------------------------------------

SnapshotReceiver::SnapshotReceiver(NodeId self, Send send, const Clock& clock, Logger& logger)
    : self_(self), send_(std::move(send)), clock_(clock), logger_(logger) {}

void SnapshotReceiver::on_chunk(NodeId from, ByteSpan body) {
    auto chunk = decode_snapshot_chunk(body);
    if (!chunk) {
        QUEEN_LOG(logger_, Level::warn, "snapshot.bad_chunk",
                  "peer=" << from << " error=\"" << chunk.error().message() << "\"");
        return;
    }
    {
        std::lock_guard lock(mutex_);
        if (chunk->session != session_ || session_ == 0) {
            return;  // an answer to a request given up on
        }
        answer_.emplace(body.begin(), body.end());
        answer_from_ = from;
    }
    arrived_.notify_all();
}

void SnapshotReceiver::cancel() {
    {
        std::lock_guard lock(mutex_);
        is_cancelled_ = true;
    }
    arrived_.notify_all();
}

Result<std::uint64_t> SnapshotReceiver::fetch(const std::filesystem::path& dir, LogIndex index,
                                              const Leader& leader) {
    constexpr auto answer_timeout = std::chrono::seconds(2);
    constexpr auto retry_pause = std::chrono::milliseconds(100);
    log::FileSystem& fs = log::posix_file_system();
    const std::filesystem::path path = dir / "data.mdb";
    std::unique_ptr<log::File> file;
    std::uint64_t offset = 0;
    std::uint64_t received = 0;
    NodeId source;
    const auto start_over = [&]() -> Status {
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
        QUEEN_TRY(create_directories_durably(dir));
        QUEEN_TRY(file, fs.open(path, log::OpenMode::create_exclusive));
        offset = 0;
        std::lock_guard lock(mutex_);
        session_ = (self_.value() << 40) ^ (clock_.wall_ms() << 8) ^ ++sessions_;
        answer_.reset();
        return {};
    };
    QUEEN_TRY(start_over());
    std::unique_lock lock(mutex_);
    while (true) {
        if (is_cancelled_) {
            session_ = 0;
            return Error{Errc::cancelled, "snapshot download cancelled"};
        }
        const NodeId target = leader();
        if (target == raft::no_node || target == self_) {
            arrived_.wait_for(lock, retry_pause);
            continue;
        }
        if (source != raft::no_node && target != source && offset > 0) {
            lock.unlock();
            QUEEN_LOG(logger_, Level::info, "snapshot.source_changed",
                      "from=" << source << " to=" << target << " offset=" << offset);
            QUEEN_TRY(start_over());
            lock.lock();
        }
        source = target;
        Bytes request;
        encode_snapshot_request(SnapshotRequest{session_, index, offset}, request);
        const std::uint64_t session = session_;
        answer_.reset();
        lock.unlock();
        const bool is_sent = send_(target, request);
        lock.lock();
        if (!is_sent) {
            arrived_.wait_for(lock, retry_pause);
            continue;
        }
        arrived_.wait_for(lock, answer_timeout,
                          [&] { return is_cancelled_ || answer_.has_value(); });
        if (!answer_ || answer_from_ != target || session != session_) {
            continue;  // lost, cancelled, or from another node: ask again
        }
        Bytes frame = std::move(*answer_);
        answer_.reset();
        const SnapshotChunk chunk = *decode_snapshot_chunk(frame);
        switch (chunk.status) {
            case ChunkStatus::preparing:
            case ChunkStatus::behind: arrived_.wait_for(lock, retry_pause); continue;
            case ChunkStatus::unknown_session:
            case ChunkStatus::failed:
                lock.unlock();
                QUEEN_TRY(start_over());
                lock.lock();
                arrived_.wait_for(lock, retry_pause);
                continue;
            case ChunkStatus::ok: break;
        }
        if (chunk.offset != offset) {
            continue;  // an answer to an earlier request
        }
        lock.unlock();
        std::uint64_t written = 0;
        while (written < chunk.data.size()) {
            QUEEN_TRY(const std::size_t n,
                      file->write_at(offset + written, chunk.data.subspan(written)));
            written += n;
        }
        offset += chunk.data.size();
        received += chunk.data.size();
        if (offset == chunk.total) {
            QUEEN_TRY(file->sync_data());
            file.reset();
            QUEEN_TRY(sync_path(dir));
            lock.lock();
            session_ = 0;
            return received;
        }
        lock.lock();
    }
}

// -- installing ---------------------------------------------------------------------------------

Status commit_download(const std::filesystem::path& tenant_dir, const InstallMeta& meta) {
    const auto incoming = tenant_dir / snapshot_incoming_dir;
    std::ostringstream text;
    text << "index = " << meta.index.value() << "\nterm = " << meta.term.value() << "\n";
    QUEEN_TRY(write_file_durably(incoming / "meta", text.str()));
    return rename_durably(incoming, tenant_dir / snapshot_install_dir);
}

Result<std::optional<InstallMeta>> pending_install(const std::filesystem::path& tenant_dir) {
    const auto meta_path = tenant_dir / snapshot_install_dir / "meta";
    std::error_code ec;
    if (!std::filesystem::exists(tenant_dir / snapshot_install_dir, ec)) {
        return std::optional<InstallMeta>{};
    }
    std::ifstream in(meta_path);
    std::string key;
    std::string equals;
    std::optional<std::uint64_t> index;
    std::optional<std::uint64_t> term;
    bool is_bad = false;
    while (in >> key >> equals) {
        std::uint64_t value = 0;
        if (!(in >> value) || equals != "=") {
            is_bad = true;
            break;
        }
        std::optional<std::uint64_t>& field = key == "index" ? index : term;
        if ((key != "index" && key != "term") || field) {
            is_bad = true;  // unknown or repeated
            break;
        }
        field = value;
    }
    if (is_bad || !index || !term || !in.eof()) {
        return Error{Errc::corruption, meta_path.string() + ": not a snapshot install record"};
    }
    return std::optional<InstallMeta>{InstallMeta{LogIndex{*index}, Term{*term}}};
}

Status move_installed_state(const std::filesystem::path& tenant_dir) {
    const auto from = tenant_dir / snapshot_install_dir / "state";
    std::error_code ec;
    if (!std::filesystem::exists(from, ec)) {
        return {};  // moved before a crash, or the state held the snapshot already
    }
    // The whole directory: LMDB's lock file and the store's checkpoint record describe the old
    // data file and go with it.
    const auto state = tenant_dir / "state";
    QUEEN_TRY(remove_tree_durably(state));
    return rename_durably(from, state);
}

Status finish_install(const std::filesystem::path& tenant_dir) {
    // Renamed first: a crash while its files are removed must not leave a snapshot.install
    // without its meta (the next start would take it for a damaged install).
    const auto install = tenant_dir / snapshot_install_dir;
    const auto done = tenant_dir / "snapshot.done";
    std::error_code ec;
    if (std::filesystem::exists(install, ec)) {
        QUEEN_TRY(remove_tree_durably(done));
        QUEEN_TRY(rename_durably(install, done));
    }
    QUEEN_TRY(remove_tree_durably(done));
    return remove_tree_durably(tenant_dir / snapshot_incoming_dir);
}

}  // namespace queen::node::detail
