// modules/node/src/snapshot.hpp — a tenant's state for a follower the leader's raft log can no
// longer catch up (it was down while raft's memory moved on, or its data directory is new).
//
// Raft carries only a snapshot's metadata (index S, term, membership; raft's snapshot data is
// empty): the state itself is an LMDB environment of any size, which the follower pulls from
// the leader over the peer link, chunk by chunk, once its raft has accepted the snapshot:
//
//   leader                                       follower
//   raft: peer needs entries it no longer holds  raft Ready: snapshot at S (the Ready waits)
//                                                Tenant: snapshot_request(session, S, offset 0)
//   applied >= S? copy LMDB (a read txn, on the
//   snapshot thread) into snapshot.out/; until
//   done, answer "preparing"                     retries every 100 ms
//   answer chunks (pread on the snapshot         writes them to snapshot.incoming/, one
//   thread, chunk_bytes each)                    request per chunk (pull: the follower paces)
//                                                fsync, rename to snapshot.install/ (the commit
//                                                point), swap its LMDB for the copy, reset its
//                                                log to start after S, let raft go on
//
// The copy was taken at the leader's applied index A >= S, so the follower's state is at A
// and the entries S+1..A that raft then sends are already in it (the tenant skips them).
// The snapshot thread does the copies and the chunk reads, chunks first: a chunk asked for
// while another follower's copy is being made waits for that copy (the follower asks again after
// 2 s without an answer). The transport thread only queues the request.
// A leader that changes mid-transfer does not know the session: the follower starts over with
// the new leader. A follower that crashes keeps what it committed: snapshot.install/ is
// completed at the next start, snapshot.incoming/ is dropped (raft sends the snapshot again).
//
// Frames (cluster.hpp; after the tenant name, integers little-endian):
//   snapshot_request: u64 session, u64 snapshot index S, u64 offset
//   snapshot_chunk:   u64 session, u8 status (ChunkStatus), u64 offset, u64 total size, bytes
//
// Files in the tenant's directory:
//   snapshot.out/<peer>-<session>/data.mdb  the leader's copy for one follower; removed when the
//                                           follower starts another session, after
//                                           idle_timeout_ms without a request, and at start
//   snapshot.incoming/state/data.mdb        a follower's download in progress (removed at start)
//   snapshot.install/{meta,state/}          a complete download (meta: S and its term); while it
//                                           exists the install is not finished: state/ replaces
//                                           the tenant's state directory
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "queen/core/bytes.hpp"
#include "queen/core/clock.hpp"
#include "queen/core/ids.hpp"
#include "queen/core/logger.hpp"
#include "queen/core/result.hpp"
#include "queen/raft/types.hpp"

namespace queen::node::detail {

enum class ChunkStatus : std::uint8_t {
    ok = 0,
    preparing = 1,        ///< the leader is still copying its state: ask again
    behind = 2,           ///< the leader has not applied S yet: ask again
    unknown_session = 3,  ///< not the node that started the session (a new leader): start over
    failed = 4,           ///< the leader could not copy or read its state: start over later
};

struct SnapshotRequest {
    std::uint64_t session = 0;
    LogIndex index;  ///< S: the copy must hold at least this index
    std::uint64_t offset = 0;
};

struct SnapshotChunk {
    std::uint64_t session = 0;
    ChunkStatus status = ChunkStatus::ok;
    std::uint64_t offset = 0;
    std::uint64_t total = 0;
    ByteSpan data;  ///< points into the decoded frame
};

void encode_snapshot_request(const SnapshotRequest& request, Bytes& out);
/// Errors: Errc::corruption (short or malformed).
[[nodiscard]] Result<SnapshotRequest> decode_snapshot_request(ByteSpan bytes);
/// The frame body of a chunk whose data is `data`.
void encode_snapshot_chunk(const SnapshotChunk& chunk, Bytes& out);
/// Errors: Errc::corruption (short, malformed, or data beyond the total).
[[nodiscard]] Result<SnapshotChunk> decode_snapshot_chunk(ByteSpan bytes);

/// The leader's side: copies the state for each follower that asks and answers its chunk
/// requests. Thread-safety: every member from any thread.
class SnapshotSource {
public:
    /// Writes a consistent copy of the state (data.mdb) into the given directory.
    using Copy = std::function<Status(const std::filesystem::path& dir)>;
    using Applied = std::function<LogIndex()>;
    using Send = std::function<void(NodeId to, ByteSpan body)>;
    static constexpr std::uint64_t chunk_bytes = 4u << 20;
    static constexpr std::int64_t idle_timeout_ms = 120'000;

    /// `dir` is the tenant's snapshot.out directory, removed here (copies of an earlier run).
    SnapshotSource(std::filesystem::path dir, Copy copy, Applied applied, Send send,
                   const Clock& clock, Logger& logger);
    ~SnapshotSource();
    SnapshotSource(const SnapshotSource&) = delete;
    SnapshotSource& operator=(const SnapshotSource&) = delete;

    /// A follower's request (transport thread): never waits for a copy or a disk read.
    /// "behind", "preparing" and the refusals are answered at once; a chunk of a finished copy
    /// is read and answered by the source's thread (a pread of up to chunk_bytes must not hold
    /// up the transport thread, which carries every group's raft traffic).
    void on_request(NodeId from, ByteSpan body);
    [[nodiscard]] std::uint64_t sent_total() const;
    [[nodiscard]] std::uint64_t sent_bytes_total() const;
    /// Stops the copy thread and removes the copies. Idempotent.
    void stop();

private:
    struct Session;
    /// A chunk the thread reads and answers.
    struct Read {
        NodeId from;
        std::shared_ptr<Session> session;
        std::uint64_t offset = 0;
    };
    void run();
    void answer(NodeId to, const SnapshotChunk& chunk);
    /// Reads the chunk at `offset` of a copied session and answers it (the source's thread).
    void serve(NodeId from, Session& session, std::uint64_t offset);

    std::filesystem::path dir_;
    Copy copy_;
    Applied applied_;
    Send send_;
    const Clock& clock_;
    Logger& logger_;

    mutable std::mutex mutex_;
    std::condition_variable wakeup_;
    std::map<NodeId, std::shared_ptr<Session>> sessions_;  // one per follower
    std::deque<Read> reads_;                               // chunks asked for, oldest first
    bool is_stopping_ = false;
    std::uint64_t sent_total_ = 0;
    std::uint64_t sent_bytes_total_ = 0;
    std::thread thread_;  // copies, reads chunks, removes idle sessions; started on demand
};

/// The follower's side: pulls one snapshot into a directory. Thread-safety: fetch() on one
/// thread at a time; on_chunk() and cancel() from any thread.
class SnapshotReceiver {
public:
    using Send = std::function<bool(NodeId to, ByteSpan body)>;
    /// The node to ask (the leader as this node knows it; no_node: none, wait).
    using Leader = std::function<NodeId()>;

    SnapshotReceiver(NodeId self, Send send, const Clock& clock, Logger& logger);

    /// Pulls a copy of the leader's state holding index `index` into `dir`/data.mdb (dir is
    /// created, emptied first) and makes it durable. Asks whichever node `leader` names, again
    /// after a lost answer (2 s), a leader change or a "preparing" answer, until it has the copy
    /// or cancel(). Returns the bytes received. Errors: Errc::cancelled, Errc::io.
    [[nodiscard]] Result<std::uint64_t> fetch(const std::filesystem::path& dir, LogIndex index,
                                              const Leader& leader);
    /// A chunk frame (transport thread).
    void on_chunk(NodeId from, ByteSpan body);
    /// Makes fetch() return Errc::cancelled (now and in every later call).
    void cancel();

private:
    NodeId self_;
    Send send_;
    const Clock& clock_;
    Logger& logger_;

    std::mutex mutex_;
    std::condition_variable arrived_;
    std::uint64_t session_ = 0;    // the session fetch() waits for (0: none)
    std::uint64_t sessions_ = 0;   // sessions started (makes ids unique with self_)
    std::optional<Bytes> answer_;  // the last chunk frame of session_, not yet taken
    NodeId answer_from_;
    bool is_cancelled_ = false;
};

/// What snapshot.install/meta records: the snapshot's index and term (the log restarts after
/// them).
struct InstallMeta {
    LogIndex index;
    Term term;
};

/// Directory names (in the tenant's directory).
inline constexpr const char* snapshot_out_dir = "snapshot.out";
inline constexpr const char* snapshot_incoming_dir = "snapshot.incoming";
inline constexpr const char* snapshot_install_dir = "snapshot.install";

/// Commits a complete download: writes `meta` into `incoming` and renames it to
/// snapshot.install (durably). From here a restart finishes the install.
[[nodiscard]] Status commit_download(const std::filesystem::path& tenant_dir,
                                     const InstallMeta& meta);
/// The install to finish, if snapshot.install exists (its meta).
/// Errors: Errc::corruption (an unreadable meta), Errc::io.
[[nodiscard]] Result<std::optional<InstallMeta>> pending_install(
    const std::filesystem::path& tenant_dir);
/// Replaces the directory <tenant_dir>/state by the download's, when the download still holds
/// one (a crash may have moved it already). The state must be closed.
[[nodiscard]] Status move_installed_state(const std::filesystem::path& tenant_dir);
/// Removes snapshot.install (the install is complete) and snapshot.incoming (a download cut
/// short).
[[nodiscard]] Status finish_install(const std::filesystem::path& tenant_dir);

}  // namespace queen::node::detail
