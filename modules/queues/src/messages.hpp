// queues/src/messages.hpp — message storage (docs/engine.md, "Message blocks"): blocks of
// consecutive messages of one partition, keyed by apply order and chained per partition.
//
// "q.blocks": key u64be position (1, 2, 3, ... in the order blocks are written: MetaRecord::
// next_position; never reused), value:
//   u8 3, varint partition id, varint first sequence, varint count n, varint prev (the
//   position of the partition's previous block, 0 = none), then n records for sequences
//   first .. first+n-1, each a varint length and that many MessageRecord bytes (0 = deleted).
// Every block is appended at the end of the table, whatever its partition: the pushes of a
// batch over 10,000 partitions dirty a few pages of q.blocks, not one per partition.
//
// "q.block_index": key u64be partition + u64be last sequence of a block -> varint position, for
// every block holding a sequence that is a multiple of index_every (so at most index_every - 1
// sequences lie between two indexed blocks of a partition, or after the last indexed one).
//
// The partition's newest block is its `tail` (PartitionMem, PartitionRecord). To find sequence
// s: the first indexed block of the partition whose last sequence is >= s (else the tail), then
// its `prev` links back to the block holding s: at most index_every blocks. A link to a removed
// block (positions are never reused) ends the chain: the blocks before a partition's first
// message are removed.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "queen/core/bytes.hpp"
#include "queen/core/result.hpp"
#include "queen/queues/queries.hpp"
#include "queen/store/txn.hpp"
#include "records.hpp"

namespace queen::queues::detail {

/// The format byte of the q.blocks values written now: format, CRC-32C (4 bytes, little-endian)
/// of everything after it, then the header's varints and the records. A flipped byte anywhere in
/// a block is found when it is read (parse_block_header), never served.
inline constexpr std::uint8_t message_block_format = 4;
/// Blocks written before checksums (layout 3 without them): read as they are, never written.
inline constexpr std::uint8_t message_block_format_unchecked = 3;
/// The bytes of the checksum after the format byte.
inline constexpr std::size_t block_checksum_bytes = 4;
/// A block holding a sequence that is a multiple of this is indexed in q.block_index.
inline constexpr std::uint64_t index_every = 64;
/// The most bytes a block header takes (the format byte, the checksum and four varints).
inline constexpr std::size_t block_header_bytes_max = 1 + block_checksum_bytes + 4 * 10;

/// LMDB's room for nodes in a 4 KiB leaf page (the page minus its 16-byte header). q.blocks is
/// only appended to, and an append that does not fit the last leaf starts a new leaf holding
/// just that node, so the pushes can tell how full the last leaf is and choose the order of a
/// batch's blocks to fill it (PendingBlocks::flush). On another page size the packing is only
/// less tight.
inline constexpr std::uint32_t block_leaf_bytes = 4096 - 16;
/// The leaf bytes a block of `value_bytes` takes: LMDB's node header (8 bytes) and key (8),
/// rounded up to even, plus the node's 2-byte slot.
[[nodiscard]] constexpr std::uint32_t block_node_bytes(std::size_t value_bytes) noexcept {
    return static_cast<std::uint32_t>(((16 + value_bytes + 1) & ~std::size_t{1}) + 2);
}
/// The largest block value whose node takes at most `room` leaf bytes (block_node_bytes); 0 when
/// not even an empty one fits.
[[nodiscard]] constexpr std::size_t block_value_bytes_fitting(std::uint32_t room) noexcept {
    return room < 18 ? 0 : (room - 18) & ~std::uint32_t{1};
}
/// The last leaf's fill after appending a node of `node_bytes` to a leaf holding `fill`.
[[nodiscard]] constexpr std::uint32_t block_leaf_fill_after(std::uint32_t fill,
                                                            std::uint32_t node_bytes) noexcept {
    return fill + node_bytes <= block_leaf_bytes ? fill + node_bytes : node_bytes;
}

/// Whether a block holding sequences [first, last] is indexed.
[[nodiscard]] constexpr bool is_indexed_block(Sequence first, Sequence last) noexcept {
    return last.value() / index_every > (first.value() - 1) / index_every;
}

inline store::KeyBuilder block_key(std::uint64_t position) {
    store::KeyBuilder key;
    key.u64be(position);
    return key;
}
inline store::KeyBuilder block_index_key(PartitionId partition, Sequence last) {
    store::KeyBuilder key;
    key.u64be(partition.value()).u64be(last.value());
    return key;
}

/// What a block says about itself.
struct BlockHeader {
    PartitionId partition;
    Sequence first;
    std::uint32_t count = 0;
    std::uint64_t prev = 0;
    std::size_t records_at = 0;  ///< offset of the first record in the value
    [[nodiscard]] Sequence last() const noexcept { return Sequence{first.value() + count - 1}; }
};

/// Parses a q.blocks value's header, checking the block's checksum (format 4). Errors:
/// Errc::corruption naming the partition and sequences when the header says them, the stored
/// and computed checksums on a mismatch.
Result<BlockHeader> parse_block_header(ByteSpan value);

/// A live message read from the table: its sequence and MessageRecord bytes (valid until the
/// txn's next write or the scan's next step).
struct StoredMessage {
    Sequence sequence;
    ByteSpan record;
};

/// Walks the records of one block (or, for the migration, of a layout 2 q.messages value:
/// format 1 = one record, format 2 = u32le count and records).
class BlockReader {
public:
    /// A q.blocks value. Errors: Errc::corruption.
    static Result<BlockReader> parse(ByteSpan value);
    /// A q.blocks value whose header `header` was parsed (and its checksum checked) already: a
    /// loaded block (MessageScan::Loaded), read without a second pass over its bytes.
    static BlockReader of(ByteSpan value, const BlockHeader& header);
    /// A layout 2 q.messages value. Errors: Errc::corruption.
    static Result<BlockReader> parse_legacy(ByteSpan value);
    /// How many sequences the value covers (deleted ones included).
    [[nodiscard]] std::uint32_t count() const noexcept { return count_; }
    /// The records' bytes (each a varint length and the record; a legacy single record as it
    /// is, see is_single()).
    [[nodiscard]] ByteSpan records() const noexcept { return records_; }
    [[nodiscard]] bool is_single() const noexcept { return is_single_; }
    /// The next record (empty span = deleted); false after the last.
    /// Errors: Errc::corruption on a length past the value's end.
    Result<bool> next(ByteSpan& record);

private:
    std::uint32_t count_ = 0;
    std::uint32_t read_ = 0;
    bool is_single_ = false;
    ByteSpan records_;
    ByteReader in_{ByteSpan{}};
};

/// The live messages of one partition with sequence >= `from`, ascending. `tail` is the
/// partition's newest block (PartitionMem::tail or PartitionRecord::tail).
class MessageScan {
public:
    static Result<MessageScan> open(const store::Txn& txn, const Tables& tables,
                                    PartitionId partition, std::uint64_t tail, Sequence from);
    /// The next live message; std::nullopt past the partition's last.
    Result<std::optional<StoredMessage>> next();

    /// A block of the region being read.
    struct Loaded {
        std::uint64_t position = 0;
        ByteSpan value;
        BlockHeader header;
    };

private:
    MessageScan(const store::Txn& txn, const Tables& tables, PartitionId partition,
                std::uint64_t tail)
        : txn_(&txn), tables_(tables), partition_(partition), tail_(tail) {}
    /// Loads the blocks from the one holding `from` (or the first after it) to the next indexed
    /// block or the tail.
    Result<void> fill(Sequence from);
    /// Starts reading region_[at_].
    Result<void> start_block();

    const store::Txn* txn_;
    Tables tables_;
    PartitionId partition_;
    std::uint64_t tail_;
    std::vector<Loaded> region_;  ///< ascending
    std::size_t at_ = 0;
    bool is_last_region_ = false;   ///< region_ ends with the tail
    bool is_tail_checked_ = false;  ///< fill() looked at the tail block once
    std::optional<BlockReader> block_;
    Sequence sequence_;  ///< of the block's next record
    Sequence from_;
    bool is_done_ = false;
};

/// The blocks of `partition` from `from` (its block, or the first after it) on, ascending, up
/// to the partition's tail: what erase and the migration walk. Spans valid until the next write.
Result<std::vector<MessageScan::Loaded>> blocks_from(const store::Txn& txn, const Tables& tables,
                                                     PartitionId partition, std::uint64_t tail,
                                                     Sequence from, Sequence through);

/// Calls `visit(const MessageScan::Loaded&)` -> Result<bool> for the blocks of `partition` from
/// its tail back (newest first) until it returns false or the chain ends.
template <class Visit>
Result<void> walk_back(const store::Txn& txn, const Tables& tables, PartitionId partition,
                       std::uint64_t tail, Visit&& visit);

/// The MessageRecord bytes of (partition, sequence); std::nullopt when absent or deleted.
Result<std::optional<ByteSpan>> find_message(const store::Txn& txn, const Tables& tables,
                                             PartitionId partition, std::uint64_t tail,
                                             Sequence sequence);

/// The decoded message (partition, sequence); std::nullopt when absent or deleted.
Result<std::optional<MessageRecord>> read_message(const store::Txn& txn, const Tables& tables,
                                                  PartitionId partition, std::uint64_t tail,
                                                  Sequence sequence);

/// read_message for a reader without the applier's memory (queries): the partition's tail from
/// its record; std::nullopt also when there is no such partition.
Result<std::optional<MessageRecord>> read_stored_message(const store::Txn& txn,
                                                         const Tables& tables,
                                                         PartitionId partition, Sequence sequence);

/// Deletes the messages `sequences` (ascending, each stored and live) of `partition`: a block
/// left with no live message is removed (and the block after it linked to the one before, or
/// `tail` moved back when it was the tail); any other is rewritten with their lengths zeroed.
/// `scratch` is reused. Not journaled (callers run outside atomic entries).
Result<void> erase_messages(store::WriteTxn& txn, const Tables& tables, PartitionId partition,
                            std::uint64_t& tail, std::span<const Sequence> sequences,
                            Bytes& scratch);

/// Removes every block of `partition` and its index entries (the partition is deleted).
Result<void> erase_partition_blocks(store::WriteTxn& txn, const Tables& tables,
                                    PartitionId partition, std::uint64_t tail);

/// Appends messages of one partition to a block being built (consecutive sequences).
class BlockBuilder {
public:
    /// Starts an empty block at `first` (reusing the storage).
    void start(PartitionId partition, Sequence first);
    /// Adds the MessageRecord of a pushed item as sequence first + count(), encoded in place.
    void add_message(TimestampMs created_at, const PushItem& item);
    /// Adds a record's bytes as they are (the migration).
    void add_record(ByteSpan record);
    [[nodiscard]] PartitionId partition() const noexcept { return partition_; }
    [[nodiscard]] Sequence first() const noexcept { return first_; }
    [[nodiscard]] std::uint32_t count() const noexcept { return count_; }
    /// The sequence the next added message gets: first + count().
    [[nodiscard]] Sequence next() const noexcept { return Sequence{first_.value() + count_}; }
    /// The records' bytes so far.
    [[nodiscard]] std::size_t bytes() const noexcept {
        return bytes_.size() - block_header_bytes_max;
    }
    /// The finished value, linked to `prev` (the header is written in front of the records).
    ByteSpan value(std::uint64_t prev);
    /// The most leading messages (fewer than count()) whose block, linked to `prev`, is at most
    /// `value_bytes_max` bytes; 0 when not even one fits.
    [[nodiscard]] std::uint32_t prefix_fitting(std::size_t value_bytes_max,
                                               std::uint64_t prev) const;
    /// The value of a block of the first `count` messages, linked to `prev`, built in `out`.
    ByteSpan prefix_value(std::uint32_t count, std::uint64_t prev, Bytes& out) const;
    /// Drops the first `count` messages (written as a block of their own): the block now starts
    /// at first() + count.
    void drop_front(std::uint32_t count);

private:
    /// The bytes of the first `count` record blobs.
    [[nodiscard]] std::size_t head_bytes(std::uint32_t count) const;

    PartitionId partition_;
    Sequence first_;
    std::uint32_t count_ = 0;
    Bytes bytes_;  ///< block_header_bytes_max reserved, then the records
};

/// Encodes a block value from its parts into `out` (the erase's rewrite, the migration).
void encode_block(Bytes& out, PartitionId partition, Sequence first, std::uint32_t count,
                  std::uint64_t prev, ByteSpan records);

/// The blocks the pushes of one apply batch are building, one per partition, written at the
/// batch's end (or before anything else reads or deletes messages).
class PendingBlocks {
public:
    static constexpr std::size_t none = SIZE_MAX;
    /// The index of the block of `partition` being built; `none` when there is none. Indexes
    /// stay valid until flush() or clear().
    [[nodiscard]] std::size_t find(PartitionId partition) const;
    /// Starts the block of `partition` at `first` (there is none); returns its index.
    std::size_t start(PartitionId partition, Sequence first);
    BlockBuilder& at(std::size_t index) noexcept { return blocks_[index]; }
    [[nodiscard]] bool empty() const noexcept { return used_ == 0; }
    /// Calls `write(block, count)` -> Result<std::uint32_t> until every message is written: it
    /// writes the block's first `count` messages as one block (all of them: the whole block)
    /// and returns the last leaf's fill after it. Then forgets the blocks (keeping a bounded
    /// number of buffers for the next batch). The order packs leaves: with the last leaf of
    /// q.blocks holding `leaf_fill` bytes, each next block is the largest that still fits it;
    /// when none does, the largest block with a head of messages that fits the room left gives
    /// that head as a block of its own; else the largest block starts a new leaf.
    /// `node_bytes(block)` is a block's cost in a leaf (block_node_bytes), `prefix(block, room)`
    /// the messages of its head that fit `room` leaf bytes (BlockBuilder::prefix_fitting).
    /// Blocks of one batch are of different partitions and a split block's head goes first, so
    /// every partition's chain keeps its order; the order is a function of the blocks and
    /// `leaf_fill` only (ties go to the block started first), so a replay writes the same bytes.
    template <class NodeBytes, class Prefix, class Write>
    Result<void> flush(std::uint32_t leaf_fill, NodeBytes&& node_bytes, Prefix&& prefix,
                       Write&& write) {
        order_.clear();
        for (std::size_t i = 0; i < used_; ++i) {
            if (blocks_[i].count() > 0) {
                order_.push_back({node_bytes(blocks_[i]), i});
            }
        }
        // Largest first; among equals, the one started first.
        const auto before = [](const Slot& a, const Slot& b) {
            return a.bytes != b.bytes ? a.bytes > b.bytes : a.index < b.index;
        };
        std::sort(order_.begin(), order_.end(), before);
        std::size_t first_left = 0;  // order_[0, first_left) are written
        std::size_t left = order_.size();
        while (left > 0) {
            while (order_[first_left].index == written) {
                ++first_left;
            }
            const auto unwritten = order_.begin() + static_cast<std::ptrdiff_t>(first_left);
            // The first unwritten slot at or after the largest that fits the room left.
            const std::uint32_t room = block_leaf_bytes - std::min(leaf_fill, block_leaf_bytes);
            auto it = std::partition_point(unwritten, order_.end(),
                                           [room](const Slot& slot) { return slot.bytes > room; });
            while (it != order_.end() && it->index == written) {
                ++it;
            }
            if (it != order_.end()) {
                QUEEN_TRY(leaf_fill, write(blocks_[it->index], blocks_[it->index].count()));
                it->index = written;
                --left;
                continue;
            }
            // Nothing fits whole: the head of the largest block that has one that fits.
            bool is_split = false;
            for (auto split = unwritten; room >= split_room_min && split != order_.end(); ++split) {
                if (split->index == written || blocks_[split->index].count() < 2) {
                    continue;
                }
                BlockBuilder& block = blocks_[split->index];
                const std::uint32_t head = prefix(block, room);
                if (head == 0) {
                    continue;
                }
                QUEEN_TRY(leaf_fill, write(block, head));
                // The rest takes its place in the order (it is smaller now).
                const Slot rest{node_bytes(block), split->index};
                order_.erase(split);
                order_.insert(std::upper_bound(order_.begin(), order_.end(), rest, before), rest);
                first_left = 0;
                is_split = true;
                break;
            }
            if (!is_split) {  // a new leaf
                QUEEN_TRY(leaf_fill,
                          write(blocks_[unwritten->index], blocks_[unwritten->index].count()));
                unwritten->index = written;
                --left;
            }
        }
        clear();
        return {};
    }

private:
    /// Forgets the blocks (written by flush(); an aborted txn rebuilds the whole State).
    void clear();

    struct Slot {
        std::uint32_t bytes;  ///< the block's node bytes
        std::size_t index;    ///< into blocks_; `written` once it is
    };
    static constexpr std::size_t written = SIZE_MAX;
    /// Leaf room below which no head is split off (a block of one small message takes more).
    static constexpr std::uint32_t split_room_min = 128;

    std::vector<BlockBuilder> blocks_;
    std::vector<Slot> order_;                             ///< flush()'s scratch
    std::size_t used_ = 0;                                ///< blocks_[0, used_) are being built
    std::unordered_map<PartitionId, std::size_t> index_;  ///< partition -> blocks_ index
};

// ------------------------------------------------------------------------------------------

/// Reads the block at `position`; std::nullopt when there is none. Errors: Errc::corruption (a
/// block of another partition than `partition`, unless it is 0 = any).
Result<std::optional<MessageScan::Loaded>> load_block(const store::Txn& txn, const Tables& tables,
                                                      std::uint64_t position,
                                                      PartitionId partition);

template <class Visit>
Result<void> walk_back(const store::Txn& txn, const Tables& tables, PartitionId partition,
                       std::uint64_t tail, Visit&& visit) {
    std::uint64_t position = tail;
    while (position != 0) {
        QUEEN_TRY(auto loaded, load_block(txn, tables, position, partition));
        if (!loaded) {
            return {};  // the chain's start: the blocks before were removed
        }
        QUEEN_TRY(const bool more, visit(*loaded));
        if (!more) {
            return {};
        }
        position = loaded->header.prev;
    }
    return {};
}

}  // namespace queen::queues::detail
