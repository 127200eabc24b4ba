// modules/raft/src/snapshot.cpp — snapshots: the leader sends one chunk by chunk, the follower
// assembles the chunks and restores its log from it (compact() is in raw_node.cpp).
#include <algorithm>
#include <utility>

#include "raw_node_impl.hpp"

namespace queen::raft {

void RawNode::Impl::send_snapshot_chunk(NodeId to, Progress& pr) {
    const std::uint64_t size = snapshot.data.size();
    const std::uint64_t offset = std::min(pr.snapshot_offset, size);
    const std::uint64_t length = std::min(options.snapshot_chunk_bytes_max, size - offset);
    Message m;
    m.type = MessageType::snapshot;
    m.to = to;
    m.snapshot = snapshot.meta;
    m.snapshot_offset = offset;
    m.snapshot_size = size;
    m.is_last_chunk = offset + length == size;
    const auto begin = snapshot.data.begin() + static_cast<std::ptrdiff_t>(offset);
    m.snapshot_chunk.assign(begin, begin + static_cast<std::ptrdiff_t>(length));
    m.commit = commit;
    pr.is_probe_sent = true;
    send(std::move(m));
}

void RawNode::Impl::reply_snapshot(NodeId to, const SnapshotMeta& meta, std::uint64_t offset,
                                   bool reject) {
    Message r;
    r.type = MessageType::snapshot_response;
    r.to = to;
    r.snapshot = meta;
    r.snapshot_offset = offset;
    r.reject = reject;
    send(std::move(r));
}

void RawNode::Impl::handle_snapshot(const Message& m) {
    const SnapshotMeta& meta = m.snapshot;
    if (meta.index <= commit) {
        Message r;
        r.type = MessageType::append_response;
        r.to = m.from;
        r.index = commit;
        send(std::move(r));
        return;
    }
    if (m.snapshot_size > options.snapshot_bytes_max) {
        QUEEN_LOG(logger, Level::error, "raft.snapshot_too_large",
                  "node=" << id << " bytes=" << m.snapshot_size);
        return;
    }
    if (m.snapshot_offset == 0) {
        receiving_meta = meta;
        receiving_data.clear();
        is_receiving = true;
    } else if (!is_receiving || !(receiving_meta == meta)) {
        reply_snapshot(m.from, meta, 0, true);
        return;
    }
    if (m.snapshot_offset != receiving_data.size()) {
        reply_snapshot(m.from, meta, receiving_data.size(), true);
        return;
    }
    receiving_data.insert(receiving_data.end(), m.snapshot_chunk.begin(), m.snapshot_chunk.end());
    if (!m.is_last_chunk) {
        reply_snapshot(m.from, meta, receiving_data.size(), false);
        return;
    }
    if (receiving_data.size() != m.snapshot_size) {
        is_receiving = false;
        receiving_data.clear();
        reply_snapshot(m.from, meta, 0, true);
        return;
    }
    is_receiving = false;
    Bytes data;
    data.swap(receiving_data);
    Message r;
    r.type = MessageType::append_response;
    r.to = m.from;
    if (restore(meta, std::move(data))) {
        r.index = last_index();
    } else {
        r.index = commit;
    }
    send(std::move(r));
}

// Installs a snapshot received from the leader. False when the log already holds it.
bool RawNode::Impl::restore(const SnapshotMeta& meta, Bytes data) {
    if (meta.index <= commit) {
        return false;
    }
    if (matches(meta.index, meta.term)) {
        // Our log already contains the snapshot's last entry: just move the commit.
        commit_to(meta.index);
        return false;
    }
    QUEEN_LOG(logger, Level::info, "raft.snapshot_restored",
              "node=" << id << " term=" << term << " index=" << meta.index
                      << " snapshot_term=" << meta.term << " bytes=" << data.size());
    log.clear();
    // The caller's log up to meta.index is replaced by the snapshot (once this Ready is
    // written); what it holds there until then may be entries that were never committed.
    source_floor = std::max(source_floor, meta.index);
    snapshot.meta = meta;
    snapshot.data = std::move(data);
    commit = meta.index;
    stable = std::min(stable, meta.index);
    persist_handed = meta.index;
    apply_handed = std::max(apply_handed, meta.index);
    conf = meta.conf_state;
    conf_history.clear();
    restore_pending = snapshot;
    return true;
}

}  // namespace queen::raft
