// queues/src/messages.cpp — reading, deleting and building q.messages blocks.
#include "messages.hpp"

#include <string>

namespace queen::queues::detail {
namespace {

Error corrupt(const std::string& what) {
    return Error{queen::Errc::corruption, "queues: message block: " + what};
}

/// The (partition, first sequence) of a q.messages key.
struct BlockKey {
    PartitionId partition;
    Sequence first;
};

BlockKey key_of(ByteSpan key) {
    store::KeyReader reader(key);
    BlockKey out;
    out.partition = PartitionId{reader.u64be()};
    out.first = Sequence{reader.u64be()};
    return out;
}

/// The entry holding (partition, sequence), positioning `cursor` on it; std::nullopt when no
/// block covers the sequence.
Result<std::optional<store::Entry>> seek_block(store::Cursor& cursor, PartitionId partition,
                                               Sequence sequence) {
    QUEEN_TRY(auto entry, cursor.seek(message_key(partition, sequence).span()));
    if (entry) {
        const BlockKey key = key_of(entry->key);
        if (key.partition == partition && key.first == sequence) {
            return entry;
        }
    }
    // Not a block's first sequence: the block before may cover it.
    QUEEN_TRY(entry, cursor.prev());
    if (!entry) {
        return entry;
    }
    const BlockKey key = key_of(entry->key);
    if (key.partition != partition || key.first > sequence) {
        return std::optional<store::Entry>{};
    }
    QUEEN_TRY(auto block, BlockReader::parse(entry->value));
    if (sequence.value() - key.first.value() >= block.count()) {
        return std::optional<store::Entry>{};
    }
    return entry;
}

}  // namespace

Result<BlockReader> BlockReader::parse(ByteSpan value) {
    BlockReader out;
    if (!value.empty() && value[0] == record_format_version) {
        out.count_ = 1;
        out.is_single_ = true;
        out.single_ = value;
        return out;
    }
    if (value.size() < message_block_header_bytes || value[0] != message_block_format) {
        return corrupt("a value of " + std::to_string(value.size()) + " bytes, format " +
                       std::to_string(value.empty() ? 0 : value[0]));
    }
    out.count_ = load_le<std::uint32_t>(value.data() + 1);
    out.in_ = ByteReader(value.subspan(message_block_header_bytes));
    return out;
}

Result<bool> BlockReader::next(ByteSpan& record) {
    if (read_ == count_) {
        return false;
    }
    ++read_;
    if (is_single_) {
        record = single_;
        return true;
    }
    const std::uint64_t length = in_.varint();
    record = in_.raw(static_cast<std::size_t>(length));
    if (!in_.ok()) {
        return corrupt("record " + std::to_string(read_) + " of " + std::to_string(count_) +
                       " runs past the value");
    }
    return true;
}

Result<MessageScan> MessageScan::open(const store::Txn& txn, store::Table table,
                                      PartitionId partition, Sequence from) {
    QUEEN_TRY(auto cursor, txn.cursor(table));
    MessageScan scan(std::move(cursor), partition);
    QUEEN_TRY(auto covering, seek_block(scan.cursor_, partition, from));
    if (!covering) {
        // The first block after `from`, if any.
        QUEEN_TRY(covering, scan.cursor_.seek(message_key(partition, from).span()));
    }
    QUEEN_TRY(scan.load(covering));
    // Skip the records before `from` in the covering block.
    while (!scan.is_done_ && scan.sequence_ < from) {
        ByteSpan skipped;
        QUEEN_TRY(const bool more, scan.block_->next(skipped));
        if (!more) {
            break;
        }
        scan.sequence_ = scan.sequence_.next();
    }
    return scan;
}

Result<void> MessageScan::load(const std::optional<store::Entry>& entry) {
    if (!entry || key_of(entry->key).partition != partition_) {
        is_done_ = true;
        block_.reset();
        return {};
    }
    QUEEN_TRY(auto block, BlockReader::parse(entry->value));
    block_ = block;
    sequence_ = key_of(entry->key).first;
    return {};
}

Result<std::optional<StoredMessage>> MessageScan::next() {
    while (!is_done_) {
        ByteSpan record;
        QUEEN_TRY(const bool more, block_->next(record));
        if (!more) {
            QUEEN_TRY(auto entry, cursor_.next());
            QUEEN_TRY(load(entry));
            continue;
        }
        const Sequence sequence = sequence_;
        sequence_ = sequence_.next();
        if (!record.empty()) {
            return std::optional<StoredMessage>{StoredMessage{sequence, record}};
        }
    }
    return std::optional<StoredMessage>{};
}

Result<std::optional<ByteSpan>> find_message(const store::Txn& txn, store::Table table,
                                             PartitionId partition, Sequence sequence) {
    QUEEN_TRY(auto scan, MessageScan::open(txn, table, partition, sequence));
    QUEEN_TRY(auto stored, scan.next());
    if (!stored || stored->sequence != sequence) {
        return std::optional<ByteSpan>{};  // absent or deleted: the scan went past it
    }
    return std::optional<ByteSpan>{stored->record};
}

Result<std::optional<MessageRecord>> read_message(const store::Txn& txn, store::Table table,
                                                  PartitionId partition, Sequence sequence) {
    QUEEN_TRY(auto record, find_message(txn, table, partition, sequence));
    if (!record) {
        return std::optional<MessageRecord>{};
    }
    QUEEN_TRY(auto message, decode_message(*record));
    return std::optional<MessageRecord>{std::move(message)};
}

Result<void> erase_messages(store::WriteTxn& txn, store::Table table, PartitionId partition,
                            std::span<const Sequence> sequences, Bytes& scratch) {
    std::size_t at = 0;
    while (at < sequences.size()) {
        QUEEN_TRY(auto cursor, txn.cursor(table));
        QUEEN_TRY(auto entry, seek_block(cursor, partition, sequences[at]));
        if (!entry) {
            return corrupt("no block holds message " + std::to_string(sequences[at].value()) +
                           " of partition " + std::to_string(partition.value()));
        }
        const BlockKey key = key_of(entry->key);
        QUEEN_TRY(auto block, BlockReader::parse(entry->value));
        scratch.clear();
        scratch.resize(message_block_header_bytes);
        scratch[0] = message_block_format;
        store_le<std::uint32_t>(scratch.data() + 1, block.count());
        ByteWriter writer(scratch);
        std::uint32_t live = 0;
        Sequence sequence = key.first;
        ByteSpan record;
        for (;;) {
            QUEEN_TRY(const bool more, block.next(record));
            if (!more) {
                break;
            }
            const bool is_doomed = at < sequences.size() && sequences[at] == sequence;
            if (is_doomed) {
                ++at;
            }
            if (is_doomed || record.empty()) {
                writer.varint(0);
            } else {
                writer.blob(record);
                ++live;
            }
            sequence = sequence.next();
        }
        const auto block_key = message_key(partition, key.first);
        if (live == 0) {
            QUEEN_TRY(txn.del(table, block_key.span()));
        } else {
            QUEEN_TRY(txn.put(table, block_key.span(), scratch));
        }
    }
    return {};
}

void BlockBuilder::start(PartitionId partition, Sequence first) {
    partition_ = partition;
    first_ = first;
    count_ = 0;
    bytes_.clear();
    bytes_.resize(message_block_header_bytes);
    bytes_[0] = message_block_format;
}

void BlockBuilder::add_message(TimestampMs created_at, const PushItem& item) {
    const std::size_t at = append_message_blob(bytes_, created_at, item);
    if (count_ == 0) {
        single_at_ = at;
        single_bytes_ = bytes_.size() - at;
    }
    ++count_;
}

ByteSpan BlockBuilder::value() {
    store_le<std::uint32_t>(bytes_.data() + 1, count_);
    return bytes_;
}

std::size_t PendingBlocks::find(PartitionId partition) const {
    const auto it = index_.find(partition);
    return it == index_.end() ? none : it->second;
}

std::size_t PendingBlocks::start(PartitionId partition, Sequence first) {
    if (used_ == blocks_.size()) {
        blocks_.emplace_back();
    }
    index_.emplace(partition, used_);
    blocks_[used_].start(partition, first);
    return used_++;
}

void PendingBlocks::clear() {
    // A batch over many partitions leaves many buffers: keep a few for the next one.
    constexpr std::size_t kept_max = 64;
    if (blocks_.size() > kept_max) {
        blocks_.resize(kept_max);
    }
    used_ = 0;
    index_.clear();
}

}  // namespace queen::queues::detail
