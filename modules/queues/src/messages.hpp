// queues/src/messages.hpp — the "q.messages" table: blocks of consecutive messages of one
// partition (docs/engine.md, "Message blocks").
//
// Key: u64be partition + u64be first sequence. Value, one of:
//   format 1: one MessageRecord (its own format byte 1), the message `first`;
//   format 2: a block: byte 2, u32le count n, then n records for sequences first .. first+n-1,
//             each a varint length and that many MessageRecord bytes; length 0 = deleted.
// A push writes one block per partition it touches (one B-tree insert for all of its messages
// there); deletes rewrite a block with zero lengths, or remove it when nothing is left.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "queen/core/bytes.hpp"
#include "queen/core/result.hpp"
#include "queen/store/txn.hpp"
#include "records.hpp"

namespace queen::queues::detail {

inline constexpr std::uint8_t message_block_format = 2;
/// The format byte and the u32le count.
inline constexpr std::size_t message_block_header_bytes = 5;

/// A live message read from the table: its sequence and MessageRecord bytes (valid until the
/// txn's next write or the scan's next step).
struct StoredMessage {
    Sequence sequence;
    ByteSpan record;
};

/// Walks the records of one q.messages value.
class BlockReader {
public:
    /// Errors: Errc::corruption when `value` is neither format.
    static Result<BlockReader> parse(ByteSpan value);
    /// How many sequences the value covers (deleted ones included).
    [[nodiscard]] std::uint32_t count() const noexcept { return count_; }
    /// The next record (empty span = deleted); false after the last.
    /// Errors: Errc::corruption on a length past the value's end.
    Result<bool> next(ByteSpan& record);

private:
    std::uint32_t count_ = 0;
    std::uint32_t read_ = 0;
    bool is_single_ = false;
    ByteReader in_{ByteSpan{}};
    ByteSpan single_;
};

/// The live messages of one partition with sequence >= `from`, ascending.
class MessageScan {
public:
    static Result<MessageScan> open(const store::Txn& txn, store::Table table,
                                    PartitionId partition, Sequence from);
    /// The next live message; std::nullopt past the partition's last.
    Result<std::optional<StoredMessage>> next();

private:
    MessageScan(store::Cursor cursor, PartitionId partition)
        : cursor_(std::move(cursor)), partition_(partition) {}
    /// Loads the block of `entry` (std::nullopt or another partition ends the scan).
    Result<void> load(const std::optional<store::Entry>& entry);

    store::Cursor cursor_;
    PartitionId partition_;
    std::optional<BlockReader> block_;
    Sequence sequence_;  ///< of the block's next record
    bool is_done_ = false;
};

/// The MessageRecord bytes of (partition, sequence); std::nullopt when absent or deleted.
Result<std::optional<ByteSpan>> find_message(const store::Txn& txn, store::Table table,
                                             PartitionId partition, Sequence sequence);

/// The decoded message (partition, sequence); std::nullopt when absent or deleted.
Result<std::optional<MessageRecord>> read_message(const store::Txn& txn, store::Table table,
                                                  PartitionId partition, Sequence sequence);

/// Deletes the messages `sequences` (ascending, each stored and live) of `partition`: a block
/// left with no live message is removed, any other is rewritten with their lengths zeroed.
/// `scratch` is reused for the rewritten values. Not journaled (callers run outside atomic
/// entries).
Result<void> erase_messages(store::WriteTxn& txn, store::Table table, PartitionId partition,
                            std::span<const Sequence> sequences, Bytes& scratch);

/// Appends messages of one partition to a block being built (consecutive sequences).
class BlockBuilder {
public:
    /// Starts an empty block at `first` (reusing the storage).
    void start(PartitionId partition, Sequence first);
    /// Adds the MessageRecord of a pushed item as sequence first + count(), encoded in place.
    void add_message(TimestampMs created_at, const PushItem& item);
    [[nodiscard]] PartitionId partition() const noexcept { return partition_; }
    [[nodiscard]] Sequence first() const noexcept { return first_; }
    [[nodiscard]] std::uint32_t count() const noexcept { return count_; }
    /// The sequence the next added message gets: first + count().
    [[nodiscard]] Sequence next() const noexcept { return Sequence{first_.value() + count_}; }
    [[nodiscard]] std::size_t bytes() const noexcept { return bytes_.size(); }
    /// The finished value (count filled in).
    ByteSpan value();
    /// The first record alone (a block of one is stored as its record).
    [[nodiscard]] ByteSpan single() const noexcept {
        return ByteSpan(bytes_).subspan(single_at_, single_bytes_);
    }

private:
    PartitionId partition_;
    Sequence first_;
    std::uint32_t count_ = 0;
    std::size_t single_at_ = 0;
    std::size_t single_bytes_ = 0;
    Bytes bytes_;
};

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
    /// Calls `write(block)` for each block, in the order they were started, then forgets them
    /// (keeping a bounded number of buffers for the next batch).
    template <class Write>
    Result<void> flush(Write&& write) {
        for (std::size_t i = 0; i < used_; ++i) {
            QUEEN_TRY(write(blocks_[i]));
        }
        clear();
        return {};
    }

private:
    /// Forgets the blocks (written by flush(); an aborted txn rebuilds the whole State).
    void clear();

    std::vector<BlockBuilder> blocks_;
    std::size_t used_ = 0;                                ///< blocks_[0, used_) are being built
    std::unordered_map<PartitionId, std::size_t> index_;  ///< partition -> blocks_ index
};

}  // namespace queen::queues::detail
