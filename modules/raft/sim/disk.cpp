// modules/raft/sim/disk.cpp — the disk model (writes reach a page cache; a sync or a kill makes
// them durable, a power loss a random prefix of them) and the state machine's snapshot encoding.
#include <algorithm>
#include <utility>

#include "simulation_impl.hpp"

namespace queen::raft::sim::detail {

namespace {

void apply_write(DiskImage& image, const PendingWrite& w) {
    switch (w.kind) {
        case PendingWrite::Kind::hard_state: image.hard_state = w.hard_state; break;
        case PendingWrite::Kind::snapshot:
            image.snapshot = w.snapshot;
            image.entries.clear();
            image.retained.clear();  // the log was replaced
            break;
        case PendingWrite::Kind::compact:
            if (w.snapshot.meta.index > image.snapshot.meta.index) {
                // The log keeps the newest `retain` of the entries raft let go of.
                for (const Entry& e : image.entries) {
                    if (e.index <= w.snapshot.meta.index) {
                        image.retained.push_back(e);
                    }
                }
                const std::size_t keep = std::min<std::size_t>(w.retain, image.retained.size());
                image.retained.erase(image.retained.begin(),
                                     image.retained.end() - static_cast<std::ptrdiff_t>(keep));
                std::erase_if(image.entries,
                              [&](const Entry& e) { return e.index <= w.snapshot.meta.index; });
                image.snapshot = w.snapshot;
            }
            break;
        case PendingWrite::Kind::entries: {
            if (w.entries.empty()) {
                break;
            }
            const LogIndex first = w.entries.front().index;
            std::erase_if(image.entries, [&](const Entry& e) { return e.index >= first; });
            const LogIndex last =
                image.entries.empty() ? image.snapshot.meta.index : image.entries.back().index;
            QUEEN_ASSERT(first <= last.next(), "sim disk: entries write leaves a gap");
            for (const Entry& e : w.entries) {
                if (e.index > image.snapshot.meta.index) {
                    image.entries.push_back(e);
                }
            }
            break;
        }
    }
}

}  // namespace

void Disk::write(PendingWrite w) {
    apply_write(cache, w);
    pending.push_back(std::move(w));
}

void Disk::sync() {
    for (const PendingWrite& w : pending) {
        apply_write(durable, w);
    }
    pending.clear();
}

// Power loss: the log is one ordered file (one write-ahead log per node), so a random prefix of
// the unsynced writes survives; the first lost write may be torn (a prefix of its records
// survives, as CRC recovery leaves it). The hard state is never durable ahead of the entries
// written before it: that is the ordering contract of Ready (docs/raft.md).
void Disk::power_loss(Rng& rng) {
    const std::size_t kept = rng.below(pending.size() + 1);
    for (std::size_t i = 0; i < kept; ++i) {
        apply_write(durable, pending[i]);
    }
    if (kept < pending.size() && pending[kept].kind == PendingWrite::Kind::entries &&
        rng.chance(0.5)) {
        PendingWrite torn = pending[kept];
        torn.entries.resize(rng.below(torn.entries.size() + 1));
        apply_write(durable, torn);
    }
    pending.clear();
}

// Damage: a record of the synced log went bad, so recovery cuts the log there and everything
// after it is gone, acknowledged entries included (those the state machine holds, up to the
// snapshot, stay: the real node refuses to cut below what its state applied). The node
// restarts recovering (RestoreState::is_recovering) and keeps the marker until it caught up.
bool Disk::damage(Rng& rng, LogIndex applied) {
    std::size_t kept_min = 0;  // the entries the state machine durably holds stay
    while (kept_min < durable.entries.size() && durable.entries[kept_min].index <= applied) {
        ++kept_min;
    }
    if (kept_min == durable.entries.size()) {
        return false;
    }
    durable.entries.resize(kept_min + rng.below(durable.entries.size() - kept_min));
    durable.is_recovering = true;
    return true;
}

const Entry* DiskSource::find(LogIndex index) const {
    for (const auto* list : {&disk_.cache.retained, &disk_.cache.entries}) {
        if (!list->empty() && list->front().index <= index && index <= list->back().index) {
            return &(*list)[index.value() - list->front().index.value()];
        }
    }
    return nullptr;
}

Result<std::vector<Entry>> DiskSource::entries(LogIndex low, LogIndex high,
                                               std::uint64_t max_bytes) {
    std::vector<Entry> out;
    std::uint64_t bytes = 0;
    for (LogIndex i = low; i < high; i = i.next()) {
        const Entry* e = find(i);
        if (e == nullptr || (!out.empty() && bytes + e->data.size() > max_bytes)) {
            break;
        }
        served_(*e);
        bytes += e->data.size();
        out.push_back(*e);
    }
    if (out.empty()) {
        return Error{raft::Errc::compacted, "sim source: compacted"};
    }
    return out;
}

Result<Term> DiskSource::term(LogIndex index) {
    const Entry* e = find(index);
    if (e == nullptr) {
        return Error{raft::Errc::compacted, "sim source: compacted"};
    }
    served_(*e);
    return e->term;
}

Bytes StateMachine::encode() const {
    Bytes out;
    ByteWriter w(out);
    w.varint(applied.value());
    w.fixed<std::uint64_t>(hash);
    w.varint(effects);
    w.varint(sessions.size());
    for (const auto& [client, seq] : sessions) {
        w.varint(client);
        w.varint(seq);
    }
    return out;
}

StateMachine StateMachine::decode(const Bytes& data) {
    StateMachine sm;
    ByteReader r(data);
    sm.applied = LogIndex{r.varint()};
    sm.hash = r.fixed<std::uint64_t>();
    sm.effects = r.varint();
    const std::uint64_t count = r.varint();
    for (std::uint64_t i = 0; i < count && r.ok(); ++i) {
        const std::uint64_t client = r.varint();
        sm.sessions[client] = r.varint();
    }
    QUEEN_ASSERT(r.ok() && r.at_end(), "sim snapshot decodes");
    return sm;
}

}  // namespace queen::raft::sim::detail
