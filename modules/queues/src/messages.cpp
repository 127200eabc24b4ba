// queues/src/messages.cpp — reading, deleting and building the blocks of q.blocks.
#include "messages.hpp"

#include <algorithm>
#include <string>

#include "queen/core/crc32c.hpp"
#include "queen/core/field_codec.hpp"

namespace queen::queues::detail {
namespace {

Error corrupt(const std::string& what) {
    return Error{queen::Errc::corruption, "queues: message block: " + what};
}

/// The first indexed block of `partition` whose last sequence is >= `from`; 0 when none.
Result<std::uint64_t> indexed_at_or_after(const store::Txn& txn, const Tables& tables,
                                          PartitionId partition, Sequence from) {
    QUEEN_TRY(auto cursor, txn.cursor(tables.message_index));
    QUEEN_TRY(auto entry, cursor.seek(block_index_key(partition, from).span()));
    if (!entry) {
        return std::uint64_t{0};
    }
    store::KeyReader key(entry->key);
    if (key.u64be() != partition.value()) {
        return std::uint64_t{0};
    }
    ByteReader value(entry->value);
    const std::uint64_t position = value.varint();
    if (!value.ok() || !value.at_end() || position == 0) {
        return corrupt("an index entry of partition " + std::to_string(partition.value()) +
                       " holds no position");
    }
    return position;
}

/// Walks back from `start` to the block holding `from` (or the partition's first block after
/// it): the loaded blocks, ascending. `start` must exist.
Result<void> walk_to(const store::Txn& txn, const Tables& tables, PartitionId partition,
                     std::uint64_t start, Sequence from, std::vector<MessageScan::Loaded>& out,
                     const MessageScan::Loaded* start_block = nullptr) {
    out.clear();
    std::uint64_t position = start;
    while (position != 0) {
        std::optional<MessageScan::Loaded> loaded;
        if (start_block != nullptr && position == start_block->position) {
            loaded = *start_block;
        } else {
            QUEEN_TRY(loaded, load_block(txn, tables, position, partition));
        }
        if (!loaded) {
            if (out.empty()) {
                return corrupt("block " + std::to_string(position) + " of partition " +
                               std::to_string(partition.value()) + " is missing");
            }
            break;  // the chain's start
        }
        if (loaded->header.last() < from && !out.empty()) {
            // Wholly before `from` (the blocks holding the sequences between were removed): the
            // region starts after it.
            break;
        }
        const bool holds = loaded->header.first <= from;
        position = loaded->header.prev;
        out.push_back(*loaded);
        if (holds) {
            break;
        }
    }
    std::reverse(out.begin(), out.end());
    return {};
}

}  // namespace

Result<BlockHeader> parse_block_header(ByteSpan value) {
    ByteReader in(value);
    BlockHeader header;
    const std::uint8_t format = in.u8();
    std::uint32_t stored = 0;
    const bool is_checked = format == message_block_format;
    if (is_checked) {
        stored = in.fixed<std::uint32_t>();
    }
    header.partition = PartitionId{in.varint()};
    header.first = Sequence{in.varint()};
    const std::uint64_t count = in.varint();
    header.prev = in.varint();
    if (!in.ok() || (!is_checked && format != message_block_format_unchecked) || count == 0 ||
        count > UINT32_MAX || header.first.value() == 0) {
        return corrupt("a value of " + std::to_string(value.size()) + " bytes, format " +
                       std::to_string(value.empty() ? 0 : value[0]));
    }
    if (is_checked) {
        const std::uint32_t computed = crc32c(value.subspan(1 + block_checksum_bytes));
        if (computed != stored) {
            return corrupt("the block of partition " + std::to_string(header.partition.value()) +
                           " from sequence " + std::to_string(header.first.value()) + " (" +
                           std::to_string(value.size()) + " bytes) fails its checksum (stored " +
                           std::to_string(stored) + ", computed " + std::to_string(computed) +
                           "): damaged on disk");
        }
    }
    header.count = static_cast<std::uint32_t>(count);
    header.records_at = value.size() - in.remaining();
    return header;
}

}  // namespace queen::queues::detail

namespace queen::queues {

Status verify_block(ByteSpan value) {
    QUEEN_TRY(detail::parse_block_header(value));
    return {};
}

}  // namespace queen::queues

namespace queen::queues::detail {

Result<BlockReader> BlockReader::parse(ByteSpan value) {
    QUEEN_TRY(const BlockHeader header, parse_block_header(value));
    return of(value, header);
}

BlockReader BlockReader::of(ByteSpan value, const BlockHeader& header) {
    BlockReader out;
    out.count_ = header.count;
    out.records_ = value.subspan(header.records_at);
    out.in_ = ByteReader(out.records_);
    return out;
}

Result<BlockReader> BlockReader::parse_legacy(ByteSpan value) {
    constexpr std::uint8_t single_format = 1;
    constexpr std::uint8_t block_format = 2;
    constexpr std::size_t header_bytes = 5;  // the format byte and a u32le count
    BlockReader out;
    if (!value.empty() && value[0] == single_format) {
        out.count_ = 1;
        out.is_single_ = true;
        out.records_ = value;
        return out;
    }
    if (value.size() < header_bytes || value[0] != block_format) {
        return corrupt("a layout 2 value of " + std::to_string(value.size()) + " bytes, format " +
                       std::to_string(value.empty() ? 0 : value[0]));
    }
    out.count_ = load_le<std::uint32_t>(value.data() + 1);
    out.records_ = value.subspan(header_bytes);
    out.in_ = ByteReader(out.records_);
    return out;
}

Result<bool> BlockReader::next(ByteSpan& record) {
    if (read_ == count_) {
        return false;
    }
    ++read_;
    if (is_single_) {
        record = records_;
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

Result<std::optional<MessageScan::Loaded>> load_block(const store::Txn& txn, const Tables& tables,
                                                      std::uint64_t position,
                                                      PartitionId partition) {
    QUEEN_TRY(auto raw, txn.get(tables.messages, block_key(position).span()));
    if (!raw) {
        return std::optional<MessageScan::Loaded>{};
    }
    QUEEN_TRY(const BlockHeader header, parse_block_header(*raw));
    if (partition.value() != 0 && header.partition != partition) {
        return corrupt("block " + std::to_string(position) + " belongs to partition " +
                       std::to_string(header.partition.value()) + ", not " +
                       std::to_string(partition.value()));
    }
    return std::optional<MessageScan::Loaded>{MessageScan::Loaded{position, *raw, header}};
}

Result<MessageScan> MessageScan::open(const store::Txn& txn, const Tables& tables,
                                      PartitionId partition, std::uint64_t tail, Sequence from) {
    MessageScan scan(txn, tables, partition, tail);
    scan.from_ = from;
    QUEEN_TRY(scan.fill(from));
    return scan;
}

Result<void> MessageScan::fill(Sequence from) {
    region_.clear();
    at_ = 0;
    block_.reset();
    if (tail_ != 0 && !is_tail_checked_) {
        // A consumer that keeps up reads the newest blocks: when no multiple of index_every
        // lies between `from` and the partition's last sequence, no indexed block can start
        // a shorter walk than the tail, and the index is not searched.
        is_tail_checked_ = true;
        QUEEN_TRY(auto tail, load_block(*txn_, tables_, tail_, partition_));
        if (!tail) {
            return corrupt("the tail block " + std::to_string(tail_) + " of partition " +
                           std::to_string(partition_.value()) + " is missing");
        }
        if (!is_indexed_block(from, tail->header.last())) {
            is_last_region_ = true;
            QUEEN_TRY(walk_to(*txn_, tables_, partition_, tail_, from, region_, &*tail));
            return start_block();
        }
    }
    QUEEN_TRY(std::uint64_t start, indexed_at_or_after(*txn_, tables_, partition_, from));
    if (start == 0) {
        start = tail_;
    }
    is_last_region_ = start == tail_;
    if (start == 0) {
        is_done_ = true;
        return {};
    }
    QUEEN_TRY(walk_to(*txn_, tables_, partition_, start, from, region_));
    return start_block();
}

Result<void> MessageScan::start_block() {
    if (at_ == region_.size()) {
        if (is_last_region_ || region_.empty()) {
            is_done_ = true;
            return {};
        }
        return fill(region_.back().header.last().next());
    }
    const Loaded& loaded = region_[at_];
    BlockReader block = BlockReader::of(loaded.value, loaded.header);
    block_ = block;
    sequence_ = loaded.header.first;
    return {};
}

Result<std::optional<StoredMessage>> MessageScan::next() {
    while (!is_done_) {
        ByteSpan record;
        QUEEN_TRY(const bool more, block_->next(record));
        if (!more) {
            ++at_;
            QUEEN_TRY(start_block());
            continue;
        }
        const Sequence sequence = sequence_;
        sequence_ = sequence_.next();
        if (!record.empty() && sequence >= from_) {
            return std::optional<StoredMessage>{StoredMessage{sequence, record}};
        }
    }
    return std::optional<StoredMessage>{};
}

Result<std::vector<MessageScan::Loaded>> blocks_from(const store::Txn& txn, const Tables& tables,
                                                     PartitionId partition, std::uint64_t tail,
                                                     Sequence from, Sequence through) {
    std::vector<MessageScan::Loaded> out;
    std::vector<MessageScan::Loaded> region;
    Sequence at = from;
    while (at <= through) {
        QUEEN_TRY(std::uint64_t start, indexed_at_or_after(txn, tables, partition, at));
        if (start == 0) {
            start = tail;
        }
        if (start == 0) {
            break;
        }
        QUEEN_TRY(walk_to(txn, tables, partition, start, at, region));
        out.insert(out.end(), region.begin(), region.end());
        if (start == tail || region.empty()) {
            break;
        }
        at = region.back().header.last().next();
    }
    return out;
}

Result<std::optional<ByteSpan>> find_message(const store::Txn& txn, const Tables& tables,
                                             PartitionId partition, std::uint64_t tail,
                                             Sequence sequence) {
    QUEEN_TRY(auto scan, MessageScan::open(txn, tables, partition, tail, sequence));
    QUEEN_TRY(auto stored, scan.next());
    if (!stored || stored->sequence != sequence) {
        return std::optional<ByteSpan>{};  // absent or deleted: the scan went past it
    }
    return std::optional<ByteSpan>{stored->record};
}

Result<std::optional<MessageRecord>> read_message(const store::Txn& txn, const Tables& tables,
                                                  PartitionId partition, std::uint64_t tail,
                                                  Sequence sequence) {
    QUEEN_TRY(auto record, find_message(txn, tables, partition, tail, sequence));
    if (!record) {
        return std::optional<MessageRecord>{};
    }
    QUEEN_TRY(auto message, decode_message(*record));
    return std::optional<MessageRecord>{std::move(message)};
}

Result<std::optional<MessageRecord>> read_stored_message(const store::Txn& txn,
                                                         const Tables& tables,
                                                         PartitionId partition, Sequence sequence) {
    QUEEN_TRY(auto record, get_record(txn, tables.partitions, partition_key(partition).span(),
                                      decode_partition));
    if (!record) {
        return std::optional<MessageRecord>{};
    }
    return read_message(txn, tables, partition, record->tail, sequence);
}

namespace {

/// Removes the block `doomed` of `partition`: the block after it (found from the next indexed
/// block or the tail) is linked to the one before it, or `tail` moves back when it was the tail.
Result<void> remove_block(store::WriteTxn& txn, const Tables& tables, PartitionId partition,
                          std::uint64_t& tail, std::uint64_t doomed) {
    QUEEN_TRY(auto loaded, load_block(txn, tables, doomed, partition));
    if (!loaded) {
        return corrupt("block " + std::to_string(doomed) + " to remove is missing");
    }
    const BlockHeader header = loaded->header;
    // The partition's first block (the chain ends before it): the link to it from its successor
    // then ends the chain as well, so nothing is relinked (retention removes blocks this way).
    bool is_first = header.prev == 0;
    if (!is_first) {
        QUEEN_TRY(auto before, txn.get(tables.messages, block_key(header.prev).span()));
        is_first = !before.has_value();
    }
    if (doomed == tail) {
        tail = is_first ? 0 : header.prev;
    } else if (!is_first) {
        // Its successor holds the sequence after its last.
        QUEEN_TRY(auto after, blocks_from(txn, tables, partition, tail, header.last().next(),
                                          header.last().next()));
        const auto successor = std::find_if(after.begin(), after.end(), [&](const auto& block) {
            return block.header.prev == doomed;
        });
        if (successor == after.end()) {
            return corrupt("no block of partition " + std::to_string(partition.value()) +
                           " follows block " + std::to_string(doomed));
        }
        const ByteSpan records = successor->value.subspan(successor->header.records_at);
        Bytes relinked;
        encode_block(relinked, partition, successor->header.first, successor->header.count,
                     header.prev, records);
        QUEEN_TRY(txn.put(tables.messages, block_key(successor->position).span(), relinked));
    }
    if (is_indexed_block(header.first, header.last())) {
        QUEEN_TRY(txn.del(tables.message_index, block_index_key(partition, header.last()).span()));
    }
    QUEEN_TRY(txn.del(tables.messages, block_key(doomed).span()));
    return {};
}

}  // namespace

Result<void> erase_messages(store::WriteTxn& txn, const Tables& tables, PartitionId partition,
                            std::uint64_t& tail, std::span<const Sequence> sequences,
                            Bytes& scratch) {
    if (sequences.empty()) {
        return {};
    }
    // Read first (the spans die with the first write), then write block by block, ascending.
    struct Change {
        std::uint64_t position;
        std::uint32_t live;
        Bytes records;
    };
    std::vector<Change> changes;
    {
        QUEEN_TRY(auto blocks,
                  blocks_from(txn, tables, partition, tail, sequences.front(), sequences.back()));
        std::size_t at = 0;
        for (const auto& loaded : blocks) {
            if (at == sequences.size()) {
                break;
            }
            if (sequences[at] > loaded.header.last()) {
                continue;
            }
            BlockReader block = BlockReader::of(loaded.value, loaded.header);
            Change change{loaded.position, 0, {}};
            ByteWriter writer(change.records);
            Sequence sequence = loaded.header.first;
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
                    ++change.live;
                }
                sequence = sequence.next();
            }
            changes.push_back(std::move(change));
        }
        if (at != sequences.size()) {
            return corrupt("no block holds message " + std::to_string(sequences[at].value()) +
                           " of partition " + std::to_string(partition.value()));
        }
    }
    for (const Change& change : changes) {
        if (change.live == 0) {
            QUEEN_TRY(remove_block(txn, tables, partition, tail, change.position));
            continue;
        }
        // Its header as stored now (a removal before may have relinked it).
        QUEEN_TRY(auto loaded, load_block(txn, tables, change.position, partition));
        if (!loaded) {
            return corrupt("block " + std::to_string(change.position) + " vanished");
        }
        const BlockHeader header = loaded->header;
        encode_block(scratch, partition, header.first, header.count, header.prev, change.records);
        QUEEN_TRY(txn.put(tables.messages, block_key(change.position).span(), scratch));
    }
    return {};
}

Result<void> erase_partition_blocks(store::WriteTxn& txn, const Tables& tables,
                                    PartitionId partition, std::uint64_t tail) {
    std::vector<std::uint64_t> positions;
    QUEEN_TRY(walk_back(txn, tables, partition, tail,
                        [&](const MessageScan::Loaded& loaded) -> Result<bool> {
                            positions.push_back(loaded.position);
                            return true;
                        }));
    for (const std::uint64_t position : positions) {
        QUEEN_TRY(txn.del(tables.messages, block_key(position).span()));
    }
    store::KeyBuilder prefix;
    prefix.u64be(partition.value());
    QUEEN_TRY(auto cursor, txn.cursor(tables.message_index));
    QUEEN_TRY(auto entry, cursor.seek(prefix.span()));
    while (entry && entry->key.size() >= 8 &&
           std::equal(prefix.span().begin(), prefix.span().end(), entry->key.begin())) {
        QUEEN_TRY(cursor.del());
        QUEEN_TRY(entry, cursor.next());
    }
    return {};
}

void encode_block(Bytes& out, PartitionId partition, Sequence first, std::uint32_t count,
                  std::uint64_t prev, ByteSpan records) {
    out.clear();
    out.reserve(block_header_bytes_max + records.size());
    ByteWriter writer(out);
    writer.u8(message_block_format);
    writer.fixed<std::uint32_t>(0);  // the checksum, below
    writer.varint(partition.value());
    writer.varint(first.value());
    writer.varint(count);
    writer.varint(prev);
    out.insert(out.end(), records.begin(), records.end());
    store_le<std::uint32_t>(out.data() + 1,
                            crc32c(ByteSpan(out).subspan(1 + block_checksum_bytes)));
}

void BlockBuilder::start(PartitionId partition, Sequence first) {
    partition_ = partition;
    first_ = first;
    count_ = 0;
    bytes_.clear();
    bytes_.resize(block_header_bytes_max);
}

void BlockBuilder::add_message(TimestampMs created_at, const PushItem& item) {
    (void)append_message_blob(bytes_, created_at, item);
    ++count_;
}

void BlockBuilder::add_record(ByteSpan record) {
    ByteWriter(bytes_).blob(record);
    ++count_;
}

ByteSpan BlockBuilder::value(std::uint64_t prev) {
    std::array<Byte, block_header_bytes_max> header{};
    Byte* at = header.data();
    const auto put = [&](std::uint64_t value) {
        while (value >= 0x80) {
            *at++ = static_cast<Byte>(value | 0x80);
            value >>= 7;
        }
        *at++ = static_cast<Byte>(value);
    };
    *at++ = message_block_format;
    at += block_checksum_bytes;  // the checksum, below
    put(partition_.value());
    put(first_.value());
    put(count_);
    put(prev);
    const auto size = static_cast<std::size_t>(at - header.data());
    Byte* begin = bytes_.data() + block_header_bytes_max - size;
    std::copy(header.data(), at, begin);
    const ByteSpan value(begin, bytes_.size() - (block_header_bytes_max - size));
    store_le<std::uint32_t>(begin + 1, crc32c(value.subspan(1 + block_checksum_bytes)));
    return value;
}

namespace {

/// The bytes of the leading record blob of `bytes` (its varint length and the record).
std::size_t blob_bytes(ByteSpan bytes) {
    ByteReader reader(bytes);
    const std::uint64_t length = reader.varint();
    QUEEN_ASSERT(reader.ok() && length <= reader.remaining(), "a built block holds whole blobs");
    return bytes.size() - reader.remaining() + static_cast<std::size_t>(length);
}

}  // namespace

std::uint32_t BlockBuilder::prefix_fitting(std::size_t value_bytes_max, std::uint64_t prev) const {
    const std::size_t fixed = 1 + block_checksum_bytes + codec::varint_size(partition_.value()) +
                              codec::varint_size(first_.value()) + codec::varint_size(prev);
    ByteSpan records = ByteSpan(bytes_).subspan(block_header_bytes_max);
    std::size_t taken = 0;
    std::uint32_t count = 0;
    while (count + 1 < count_) {
        const std::size_t next = blob_bytes(records.subspan(taken));
        if (fixed + codec::varint_size(count + 1) + taken + next > value_bytes_max) {
            break;
        }
        taken += next;
        ++count;
    }
    return count;
}

std::size_t BlockBuilder::head_bytes(std::uint32_t count) const {
    const ByteSpan records = ByteSpan(bytes_).subspan(block_header_bytes_max);
    std::size_t taken = 0;
    for (std::uint32_t i = 0; i < count; ++i) {
        taken += blob_bytes(records.subspan(taken));
    }
    return taken;
}

ByteSpan BlockBuilder::prefix_value(std::uint32_t count, std::uint64_t prev, Bytes& out) const {
    QUEEN_ASSERT(count > 0 && count <= count_, "a block's head of 1 to count() messages");
    encode_block(out, partition_, first_, count, prev,
                 ByteSpan(bytes_).subspan(block_header_bytes_max, head_bytes(count)));
    return out;
}

void BlockBuilder::drop_front(std::uint32_t count) {
    QUEEN_ASSERT(count < count_, "a head leaves at least one message");
    const auto begin = bytes_.begin() + static_cast<std::ptrdiff_t>(block_header_bytes_max);
    bytes_.erase(begin, begin + static_cast<std::ptrdiff_t>(head_bytes(count)));
    first_ = Sequence{first_.value() + count};
    count_ -= count;
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
