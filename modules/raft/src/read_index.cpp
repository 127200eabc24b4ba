// modules/raft/src/read_index.cpp — ReadIndex: a read waits for the leader's first commit in
// its term and a quorum of heartbeat acknowledgements (or the lease), then is released.
#include <algorithm>
#include <iterator>
#include <utility>

#include "raw_node_impl.hpp"

namespace queen::raft {

void RawNode::Impl::release_read(PendingRead read) {
    if (read.from == id) {
        read_states.push_back(ReadState{read.index, std::move(read.context)});
        return;
    }
    Message m;
    m.type = MessageType::read_index_response;
    m.to = read.from;
    m.index = read.index;
    m.context = std::move(read.context);
    send(std::move(m));
}

void RawNode::Impl::start_read(Bytes context, NodeId from) {
    unquiesce(false);  // the read's heartbeat round below wakes the followers
    if (term_of(commit) != term) {
        // Our commit index is only known to be current once we commit in our term.
        if (reads_before_commit.size() < options.pending_reads_max) {
            reads_before_commit.push_back(PendingRead{std::move(context), commit, from, {}});
        }
        return;
    }
    PendingRead read{std::move(context), commit, from, {id}};
    if (quorum() <= 1 || (options.read_lease_based && !is_lease_unconfirmed)) {
        release_read(std::move(read));
        return;
    }
    if (pending_reads.size() >= options.pending_reads_max) {
        return;  // the requester times out and retries
    }
    pending_reads.push_back(std::move(read));
    broadcast_heartbeat();
}

void RawNode::Impl::ack_read(NodeId from, const Bytes& context) {
    if (context.empty()) {
        return;
    }
    auto found = std::find_if(pending_reads.begin(), pending_reads.end(),
                              [&](const PendingRead& r) { return r.context == context; });
    if (found == pending_reads.end()) {
        return;
    }
    if (std::find(found->acks.begin(), found->acks.end(), from) == found->acks.end()) {
        found->acks.push_back(from);
    }
    std::size_t voter_acks = 0;
    for (const NodeId node : found->acks) {
        voter_acks += is_voter(node) ? 1 : 0;
    }
    if (voter_acks < quorum()) {
        return;
    }
    // A quorum confirmed leadership after this read started, so every earlier read too.
    const auto end = found + 1;
    std::vector<PendingRead> done(std::make_move_iterator(pending_reads.begin()),
                                  std::make_move_iterator(end));
    pending_reads.erase(pending_reads.begin(), end);
    for (PendingRead& read : done) {
        release_read(std::move(read));
    }
}

}  // namespace queen::raft
