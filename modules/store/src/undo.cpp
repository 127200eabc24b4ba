// modules/store/src/undo.cpp — UndoLog: old values recorded before writes, put back newest first.
#include "queen/store/undo.hpp"

#include "queen/core/assert.hpp"

namespace queen::store {

void UndoLog::record(Table table, ByteSpan key, std::optional<ByteSpan> old) {
    QUEEN_ASSERT(!has_flag(table.flags(), TableFlags::dupsort),
                 "UndoLog cannot restore a dupsort key");
    if (size_ == records_.size()) {
        records_.emplace_back();
    }
    Record& record = records_[size_++];
    record.table = table;
    record.key.assign(key.begin(), key.end());
    record.has_old_value = old.has_value();
    if (old) {
        record.old_value.assign(old->begin(), old->end());
    }
}

queen::Result<void> UndoLog::put(WriteTxn& txn, Table table, ByteSpan key, ByteSpan value) {
    QUEEN_TRY(auto old, txn.get(table, key));
    record(table, key, old);
    return txn.put(table, key, value);
}

queen::Result<bool> UndoLog::del(WriteTxn& txn, Table table, ByteSpan key) {
    QUEEN_TRY(auto old, txn.get(table, key));
    if (!old) {
        return false;
    }
    record(table, key, old);
    return txn.del(table, key);
}

queen::Result<void> UndoLog::rollback(WriteTxn& txn) {
    const std::size_t size = size_;
    size_ = 0;
    for (std::size_t i = size; i-- > 0;) {
        const Record& record = records_[i];
        if (record.has_old_value) {
            QUEEN_TRY(txn.put(record.table, record.key, record.old_value));
        } else {
            QUEEN_TRY(txn.del(record.table, record.key));
        }
    }
    return {};
}

}  // namespace queen::store
