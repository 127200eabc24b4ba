// queen/testing/tables.hpp — the store helpers the state machines' tests share: bytes from a
// text, a text from bytes, and a whole LMDB table as hex (header-only: only the tests that
// link `store` include it).
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "queen/core/bytes.hpp"
#include "queen/store/env.hpp"
#include "queen/testing/result.hpp"

namespace queen::testing {

inline Bytes bytes(std::string_view s) {
    return Bytes(s.begin(), s.end());
}
inline std::string text(ByteSpan b) {
    return std::string(as_chars(b));
}

/// Every key and value of `table`, as hex (so a failed comparison prints readably).
inline std::map<std::string, std::string> dump_table(const store::Txn& txn, store::Table table) {
    std::map<std::string, std::string> out;
    auto cursor = must(txn.cursor(table));
    for (auto at = must(cursor.first()); at.has_value(); at = must(cursor.next())) {
        out.emplace(to_hex(at->key), to_hex(at->value));
    }
    return out;
}

}  // namespace queen::testing
