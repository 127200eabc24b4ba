// queen/config/schema.hpp — a typed map from TOML key paths to fields of Options structs.
// Loading a file, applying `key=value` overrides and printing the effective config all use it, so
// a setting is declared once. toml++ is used only in src/.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#include "queen/core/result.hpp"

namespace queen::config {

enum class Errc : int {
    ok = 0,
    syntax,         ///< the file is not valid TOML
    unknown_key,    ///< a key (or table) the schema does not declare
    wrong_type,     ///< e.g. a string where an integer is expected
    out_of_range,   ///< an integer outside the declared bounds
    invalid_value,  ///< an enum name that is not allowed, or a rejected value
    io,             ///< the file cannot be read
};
const std::error_category& error_category() noexcept;
inline std::error_code make_error_code(Errc e) noexcept {
    return {static_cast<int>(e), error_category()};
}

}  // namespace queen::config

template <>
struct std::is_error_code_enum<queen::config::Errc> : std::true_type {};

namespace queen::config {

/// One declared setting. Fields are type-erased accessors onto the bound member.
struct Entry {
    enum class Kind : std::uint8_t { boolean, integer, floating, string, string_list, enumeration };
    std::string path;  ///< dotted, e.g. "http.port"
    std::string doc;   ///< one line, printed as a comment above the key
    Kind kind = Kind::string;
    bool is_secret = false;  ///< render() shows "<hidden>" instead of a non-empty value
    std::int64_t integer_min = 0;
    std::int64_t integer_max = 0;
    std::vector<std::string> enum_names;
    std::function<void(bool)> set_bool;
    std::function<bool()> get_bool;
    std::function<void(std::int64_t)> set_integer;
    std::function<std::int64_t()> get_integer;
    std::function<void(double)> set_floating;
    std::function<double()> get_floating;
    std::function<void(std::string)> set_string;
    std::function<std::string()> get_string;
    std::function<void(std::vector<std::string>)> set_string_list;
    std::function<std::vector<std::string>()> get_string_list;
    std::function<void(std::size_t)> set_enum;  ///< index into enum_names
    std::function<std::size_t()> get_enum;
};

/// The set of settings a program accepts. Bind fields once; then load files, apply overrides and
/// render. The bound objects must outlive the schema. Not thread-safe.
class Schema {
public:
    /// Declares a table (e.g. "http") with a comment printed above it. Tables are also implied by
    /// the keys under them; declaring one only adds its comment.
    void add_section(std::string path, std::string doc);

    void add_bool(std::string path, bool* target, std::string doc);

    /// An integer of any width, checked against [min, max] (which default to the type's range).
    template <class Int>
    requires std::is_integral_v<Int>
    void add_integer(std::string path, Int* target, std::string doc,
                     std::int64_t min = clamp_min<Int>(), std::int64_t max = clamp_max<Int>()) {
        Entry entry;
        entry.path = std::move(path);
        entry.doc = std::move(doc);
        entry.kind = Entry::Kind::integer;
        entry.integer_min = min;
        entry.integer_max = max;
        entry.set_integer = [target](std::int64_t value) { *target = static_cast<Int>(value); };
        entry.get_integer = [target] { return static_cast<std::int64_t>(*target); };
        add(std::move(entry));
    }

    void add_double(std::string path, double* target, std::string doc);
    void add_string(std::string path, std::string* target, std::string doc);
    /// A string that must not be shown: render() prints "<hidden>" for a non-empty value (which
    /// a reload refuses where the value has a format), so --print-config never leaks it.
    void add_secret(std::string path, std::string* target, std::string doc);
    void add_path(std::string path, std::filesystem::path* target, std::string doc);
    void add_string_list(std::string path, std::vector<std::string>* target, std::string doc);

    /// A key that used to exist: a file or override naming it fails with Errc::unknown_key and
    /// a message saying it was removed and what to use instead (`replacement`, one sentence).
    void add_removed(std::string path, std::string replacement);

    /// An enum spelled by name in TOML: `names` pairs every allowed spelling with its value.
    template <class E>
    void add_enum(std::string path, E* target, std::vector<std::pair<std::string, E>> names,
                  std::string doc) {
        Entry entry;
        entry.path = std::move(path);
        entry.doc = std::move(doc);
        entry.kind = Entry::Kind::enumeration;
        std::vector<E> values;
        for (auto& [name, value] : names) {
            entry.enum_names.push_back(name);
            values.push_back(value);
        }
        entry.set_enum = [target, values](std::size_t index) { *target = values.at(index); };
        entry.get_enum = [target, values] {
            for (std::size_t i = 0; i < values.size(); ++i) {
                if (values[i] == *target) {
                    return i;
                }
            }
            return std::size_t{0};
        };
        add(std::move(entry));
    }

    /// Reads a TOML file and applies every key to the bound fields.
    /// Errors: Errc::io, Errc::syntax (with line and column), Errc::unknown_key,
    /// Errc::wrong_type, Errc::out_of_range, Errc::invalid_value, each naming the full key path
    /// (for a removed key, also what replaced it).
    /// On error some fields may already be set: callers discard the config.
    [[nodiscard]] Status load_file(const std::filesystem::path& file);
    /// Same as load_file on text; `source` names it in errors.
    [[nodiscard]] Status load_string(std::string_view text, std::string_view source);

    /// Applies one override given as text ("http.port", "8080"): parsed by the key's type
    /// (booleans: true/false; lists: comma separated). Same errors as load_file.
    [[nodiscard]] Status set(std::string_view path, std::string_view value);

    /// The effective settings as a TOML document, every key preceded by its comment.
    [[nodiscard]] std::string render() const;

    [[nodiscard]] const std::vector<Entry>& entries() const noexcept { return entries_; }
    [[nodiscard]] const Entry* find(std::string_view path) const noexcept;

private:
    template <class Int>
    static constexpr std::int64_t clamp_min() {
        return std::is_signed_v<Int> ? static_cast<std::int64_t>(std::numeric_limits<Int>::min())
                                     : 0;
    }
    template <class Int>
    static constexpr std::int64_t clamp_max() {
        return std::numeric_limits<Int>::max() > static_cast<std::uint64_t>(INT64_MAX)
                   ? INT64_MAX
                   : static_cast<std::int64_t>(std::numeric_limits<Int>::max());
    }
    void add(Entry entry);
    [[nodiscard]] Error unknown_key(const std::string& where, std::string_view path) const;

    std::vector<Entry> entries_;
    std::vector<std::pair<std::string, std::string>> removed_;   // path -> what replaced it
    std::vector<std::pair<std::string, std::string>> sections_;  // path -> doc
};

}  // namespace queen::config
