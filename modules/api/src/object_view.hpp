// api/src/object_view.hpp — one JSON object's members as the body rules of parse_ops.cpp read
// them, over either of the api's two readers:
//   - DomObject: a value parsed by nlohmann (parse_body), the KV, lock and timer routes' bodies
//     and the DOM reference reader of the tests;
//   - RawObject: the raw text of an object the streaming reader (parse_fast.cpp) has already
//     walked and validated, the transaction's operations beyond push and ack, their lock guards
//     and the transaction's `next`. Reading it again costs a scan of its bytes, no DOM.
// The rules (operation members, their errors and their order) are written once, as templates
// over a view; the views answer each question the same way:
//   - a repeated key counts with its last value, as in a DOM;
//   - an integer member follows checked_integer (json.hpp), a JSON number as nlohmann holds it;
//   - a value kept as JSON text (a KV value, a timer's payload) is compact: DomObject writes the
//     DOM again (dump_json), RawObject copies the text without the whitespace between tokens.
//     The two texts are one JSON value (numbers and escapes may be written differently), and so
//     their sizes, checked against the limits, may differ by those spellings.
// The parser agreement test and the api fuzzer (modules/api/tests, fuzz) compare both readers.
#pragma once

#include <cstdint>
#include <forward_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "json.hpp"

namespace queen::api::detail {

/// A view of a DOM value (which may not be an object: is_object() says). Holds a pointer to
/// the value, which must outlive the view.
class DomObject {
public:
    explicit DomObject(const nlohmann::json& value) noexcept : value_(&value) {}

    [[nodiscard]] bool is_object() const noexcept { return value_->is_object(); }
    /// The member is there, null included.
    [[nodiscard]] bool contains(std::string_view name) const {
        return value_->find(name) != value_->end();
    }
    /// The member is there and not null.
    [[nodiscard]] bool has_value(std::string_view name) const {
        const auto found = value_->find(name);
        return found != value_->end() && !found->is_null();
    }
    [[nodiscard]] bool is_string(std::string_view name) const {
        const auto found = value_->find(name);
        return found != value_->end() && found->is_string();
    }
    /// integer_field, boolean_field, string_field of json.hpp.
    [[nodiscard]] Result<std::int64_t> integer(std::string_view name, std::int64_t fallback,
                                               std::int64_t min, std::int64_t max) const {
        return integer_field(*value_, name, fallback, min, max);
    }
    [[nodiscard]] Result<bool> boolean(std::string_view name, bool fallback) const {
        return boolean_field(*value_, name, fallback);
    }
    [[nodiscard]] Result<std::optional<std::string>> string(std::string_view name,
                                                            std::string_view type_error) const {
        return string_field(*value_, name, type_error);
    }
    /// The member's value as the JSON text it is stored as; `fallback` when it is absent.
    [[nodiscard]] std::string json_text(std::string_view name, std::string_view fallback) const {
        const auto found = value_->find(name);
        return found == value_->end() ? std::string(fallback) : dump_json(*found);
    }
    /// The member's value as a view (absent: a view of null, which is no object).
    [[nodiscard]] DomObject member(std::string_view name) const {
        static const nlohmann::json absent;
        const auto found = value_->find(name);
        return DomObject(found == value_->end() ? absent : *found);
    }

private:
    const nlohmann::json* value_;
};

/// The members of an object read from its raw JSON text: views into the text, which must
/// outlive the object (and so must not be copied away from it: move only). Reusable: read()
/// keeps the storage of the members it replaces.
class RawObject {
public:
    RawObject() = default;
    RawObject(const RawObject&) = delete;
    RawObject& operator=(const RawObject&) = delete;
    RawObject(RawObject&&) noexcept = default;
    RawObject& operator=(RawObject&&) noexcept = default;

    /// Reads the value `text`, one an outer walk has validated (so this walk cannot fail):
    /// its members when it is an object; any other value gives an object-less view.
    /// `depth_max` is the outer walk's nesting limit.
    void read(std::string_view text, std::uint32_t depth_max);
    /// Starts an object of members given one by one with add() (a few members of a larger
    /// object, each a validated raw value as the cursor reads them).
    void start(std::uint32_t depth_max) noexcept;
    void add(std::string_view key, std::string_view raw, bool is_plain);

    [[nodiscard]] bool is_object() const noexcept { return is_object_; }
    [[nodiscard]] bool contains(std::string_view name) const noexcept {
        return find(name) != nullptr;
    }
    [[nodiscard]] bool has_value(std::string_view name) const noexcept;
    [[nodiscard]] bool is_string(std::string_view name) const noexcept;
    [[nodiscard]] Result<std::int64_t> integer(std::string_view name, std::int64_t fallback,
                                               std::int64_t min, std::int64_t max) const;
    [[nodiscard]] Result<bool> boolean(std::string_view name, bool fallback) const;
    [[nodiscard]] Result<std::optional<std::string>> string(std::string_view name,
                                                            std::string_view type_error) const;
    [[nodiscard]] std::string json_text(std::string_view name, std::string_view fallback) const;
    [[nodiscard]] RawObject member(std::string_view name) const;

private:
    struct Member {
        std::string_view key;
        std::string_view raw;   ///< the value's JSON text
        bool is_plain = false;  ///< a string without escapes: its text is raw minus the quotes
    };
    /// The member's last occurrence, or nullptr.
    [[nodiscard]] const Member* find(std::string_view name) const noexcept;

    std::vector<Member> members_;
    /// Keys that had escapes, decoded (the cursor's decoded key lives only until its next key).
    std::forward_list<std::string> keys_;
    std::uint32_t depth_max_ = 0;
    bool is_object_ = false;
};

}  // namespace queen::api::detail
