// modules/node/src/tenant_group.cpp — a tenant's records of its raft group and the cluster: the
// membership and catalogue entries it turns into system records, and what its leader does about
// placement (the catalogue's bootstrap, the preferred leader).
#include "tenant.hpp"

#include <algorithm>

#include "data_dir.hpp"
#include "entry.hpp"
#include "queen/core/thread_name.hpp"
#include "queen/raft/codec.hpp"
#include "queen/raft/errc.hpp"

namespace queen::node::detail {

Result<engine::Entry> Tenant::engine_entry(const raft::Entry& entry, std::optional<Error>& answer) {
    auto system = [&](std::string_view key, Bytes value, TimestampMs timestamp) {
        engine::Command command;
        command.body = engine::PutSystem{std::string(key), std::move(value)};
        system_scratch_.push_back(engine::encode_command(command));
        return engine::Entry{entry.index, timestamp, system_scratch_.back()};
    };
    if (entry.type == raft::EntryType::conf_change) {
        // The membership raft applies with this entry, kept in the state with it: a restart
        // (and a snapshot of this state) starts raft from it.
        QUEEN_TRY(const raft::ConfChange change, raft::decode_conf_change(entry.data));
        auto erase = [](std::vector<NodeId>& ids, NodeId id) {
            ids.erase(std::remove(ids.begin(), ids.end(), id), ids.end());
        };
        auto insert = [](std::vector<NodeId>& ids, NodeId id) {
            if (std::find(ids.begin(), ids.end(), id) == ids.end()) {
                ids.insert(std::upper_bound(ids.begin(), ids.end(), id), id);
            }
        };
        switch (change.type) {
            case raft::ConfChangeType::add_voter:
                erase(conf_state_.learners, change.node_id);
                insert(conf_state_.voters, change.node_id);
                break;
            case raft::ConfChangeType::add_learner:
                if (std::find(conf_state_.voters.begin(), conf_state_.voters.end(),
                              change.node_id) == conf_state_.voters.end()) {
                    insert(conf_state_.learners, change.node_id);
                }
                break;
            case raft::ConfChangeType::remove_node:
                erase(conf_state_.voters, change.node_id);
                erase(conf_state_.learners, change.node_id);
                break;
        }
        Bytes record;
        raft::encode_snapshot_meta(raft::SnapshotMeta{entry.index, entry.term, conf_state_},
                                   record);
        return system(raft_conf_record_key, std::move(record), TimestampMs{0});
    }
    if (entry.data.empty()) {
        return engine::Entry{entry.index, TimestampMs{0}, {}};  // a new leader's no-op
    }
    QUEEN_TRY(auto view, decode_entry(entry.data));
    if (!is_catalogue_op(view.command)) {
        return engine::Entry{entry.index, view.timestamp, view.command};
    }
    const engine::Entry no_op{entry.index, view.timestamp, {}};
    if (!catalogue_) {
        answer = Error{Errc::unsupported, "tenant " + name_ + " does not hold the catalogue"};
        return no_op;
    }
    QUEEN_TRY(const CatalogueOp op, decode_op(view.command));
    auto next = apply_op(*catalogue_, op, entry.index.value(), view.timestamp.value());
    if (!next) {
        answer = std::move(next).error();
        return no_op;
    }
    catalogue_ = std::move(*next);
    is_catalogue_changed_ = true;
    return system(catalogue_record_key, encode_catalogue(*catalogue_), view.timestamp);
}

Status Tenant::load_system_records(const TenantGroup& group) {
    QUEEN_TRY(const auto conf, engine_->system_record(raft_conf_record_key));
    if (conf) {
        QUEEN_TRY(const raft::SnapshotMeta meta, raft::decode_snapshot_meta(*conf));
        conf_state_ = meta.conf_state;
    } else {
        conf_state_ = raft::ConfState{};
        conf_state_.voters = group.founders;
        std::sort(conf_state_.voters.begin(), conf_state_.voters.end());
    }
    catalogue_.reset();
    if (group.holds_catalogue) {
        QUEEN_TRY(const auto record, engine_->system_record(catalogue_record_key));
        if (record) {
            QUEEN_TRY(catalogue_, decode_catalogue(*record));
        } else {
            catalogue_ = founding_catalogue(group.founding_members);
        }
        is_catalogue_changed_ = true;
    }
    return {};
}

void Tenant::publish_catalogue() {
    if (!is_catalogue_changed_ || !catalogue_) {
        return;
    }
    is_catalogue_changed_ = false;
    catalogue_version_.store(catalogue_->version, std::memory_order_relaxed);
    if (group_.on_catalogue) {
        group_.on_catalogue(*catalogue_);
    }
}

void Tenant::submit_catalogue_op(const CatalogueOp& op, api::Backend::Completion done) {
    Bytes payload;
    encode_entry_header(payload, TimestampMs{0});  // the replicator stamps it
    const Bytes encoded = encode_op(op);
    payload.insert(payload.end(), encoded.begin(), encoded.end());
    submit_payload(std::move(payload), std::move(done), true);
}

void Tenant::lead_placement() {
    const std::int64_t now = clock_.monotonic_ns();
    const std::int64_t retry_ns = placement_retry_ns();
    if (group_.holds_catalogue && catalogue_version_.load(std::memory_order_relaxed) == 0 &&
        now - bootstrap_asked_ns_ >= retry_ns) {
        // The first leader of a cluster writes the founding members down (catalogue.hpp).
        bootstrap_asked_ns_ = now;
        CatalogueOp op;
        op.type = CatalogueOpType::bootstrap;
        op.members = group_.founding_members;
        submit_catalogue_op(op, [this](Result<engine::CommandResult> result) {
            if (result) {
                QUEEN_LOG(logger_, Level::info, "cluster.catalogue_bootstrapped",
                          "members=" << group_.founding_members.size());
            }
        });
    }
    if (lead_membership(now)) {
        return;
    }
    const NodeId preferred{preferred_leader_.load(std::memory_order_relaxed)};
    // Only to a node that is up and nearly caught up: writes wait while a transfer runs.
    if (preferred == raft::no_node || preferred == NodeId{config_.node.id} ||
        now - transfer_asked_ns_ < retry_ns || replicator_->is_transferring() ||
        !replicator_->is_peer_current(preferred, transfer_lag_max)) {
        return;
    }
    transfer_asked_ns_ = now;
    if (auto asked = replicator_->transfer_leadership(preferred); asked) {
        QUEEN_LOG(logger_, Level::info, "tenant.leader_to_preferred",
                  "tenant=" << name_ << " to=" << preferred.value());
    }
}

std::int64_t Tenant::placement_retry_ns() const {
    // Two election timeouts: a transfer that fails (the target is down) is abandoned after one.
    return std::int64_t{2} * config_.cluster.election_ticks * config_.cluster.tick_ms * 1'000'000;
}

void Tenant::set_placement(std::vector<NodeId> replicas, NodeId preferred) {
    {
        std::lock_guard lock(placement_mutex_);
        if (placement_replicas_ != replicas) {
            placement_replicas_ = std::move(replicas);
            is_membership_settled_ = false;
        }
    }
    preferred_leader_.store(preferred.value(), std::memory_order_relaxed);
}

bool Tenant::lead_membership(std::int64_t now) {
    std::vector<NodeId> wanted;
    {
        std::lock_guard lock(placement_mutex_);
        if (is_membership_settled_) {
            return false;  // checked since the last placement or leader change
        }
        wanted = placement_replicas_;
    }
    if (wanted.empty()) {
        return false;  // no placement yet (the catalogue is not known)
    }
    const raft::NodeStatus status = replicator_->status();
    const raft::ConfState& conf = status.conf_state;
    auto has = [](const std::vector<NodeId>& ids, NodeId id) {
        return std::find(ids.begin(), ids.end(), id) != ids.end();
    };
    std::optional<raft::ConfChange> change;
    for (const NodeId node : wanted) {
        if (!has(conf.voters, node) && !has(conf.learners, node)) {
            change = raft::ConfChange{raft::ConfChangeType::add_learner, node};
            break;
        }
    }
    for (const NodeId node : conf.learners) {
        if (change) {
            break;
        }
        if (!has(wanted, node)) {
            change = raft::ConfChange{raft::ConfChangeType::remove_node, node};
        } else if (replicator_->is_peer_current(node, transfer_lag_max)) {
            change = raft::ConfChange{raft::ConfChangeType::add_voter, node};
        } else {
            return true;  // a learner catching up: nothing else changes meanwhile
        }
    }
    const NodeId self{config_.node.id};
    for (const NodeId node : conf.voters) {
        if (change) {
            break;
        }
        if (has(wanted, node)) {
            continue;
        }
        if (node != self) {
            change = raft::ConfChange{raft::ConfChangeType::remove_node, node};
            break;
        }
        // This node leaves the group: another voter leads first, then removes it.
        for (const NodeId other : conf.voters) {
            if (other != self && has(wanted, other) &&
                replicator_->is_peer_current(other, transfer_lag_max) &&
                !replicator_->is_transferring() &&
                now - transfer_asked_ns_ >= placement_retry_ns()) {
                transfer_asked_ns_ = now;
                if (replicator_->transfer_leadership(other)) {
                    QUEEN_LOG(logger_, Level::info, "tenant.leader_leaves",
                              "tenant=" << name_ << " to=" << other.value());
                }
                break;
            }
        }
        return true;
    }
    if (!change) {
        std::lock_guard lock(placement_mutex_);
        is_membership_settled_ = placement_replicas_ == wanted;
        return false;
    }
    // A joining node must start from a snapshot carrying the membership: the founders' log
    // holds no entry naming them (their membership came with the group), so the leader may
    // not send a newcomer entries from the group's first index on.
    if (change->type == raft::ConfChangeType::add_learner && status.first_index.value() <= 1) {
        return true;
    }
    if (now - membership_asked_ns_ < placement_retry_ns() / 4) {
        return true;  // one proposal per half election timeout (raft refuses a second one)
    }
    membership_asked_ns_ = now;
    const char* what = change->type == raft::ConfChangeType::add_learner ? "add_learner"
                       : change->type == raft::ConfChangeType::add_voter ? "add_voter"
                                                                         : "remove";
    if (auto proposed = replicator_->propose_conf_change(*change); proposed) {
        QUEEN_LOG(logger_, Level::info, "tenant.membership_change",
                  "tenant=" << name_ << " change=" << what << " node=" << change->node_id.value()
                            << " index=" << proposed->value());
    } else if (!proposed.error().is(raft::Errc::busy)) {
        QUEEN_LOG(logger_, Level::warn, "tenant.membership_change_refused",
                  "tenant=" << name_ << " change=" << what << " node=" << change->node_id.value()
                            << " error=\"" << proposed.error().message() << "\"");
    }
    return true;
}

}  // namespace queen::node::detail
