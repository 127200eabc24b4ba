// modules/config/src/schema.cpp — loading TOML into a Schema, overrides from text, rendering.
#include "queen/config/schema.hpp"

#include <toml++/toml.h>
#include <charconv>
#include <fstream>
#include <map>
#include <sstream>

#include "queen/core/error.hpp"

namespace queen::config {
namespace {

std::string_view describe(Errc e) noexcept {
    switch (e) {
        case Errc::ok: return "ok";
        case Errc::syntax: return "TOML syntax error";
        case Errc::unknown_key: return "unknown key";
        case Errc::wrong_type: return "wrong type";
        case Errc::out_of_range: return "value out of range";
        case Errc::invalid_value: return "invalid value";
        case Errc::io: return "cannot read the file";
    }
    return {};
}

std::string_view kind_name(Entry::Kind kind) {
    switch (kind) {
        case Entry::Kind::boolean: return "a boolean";
        case Entry::Kind::integer: return "an integer";
        case Entry::Kind::floating: return "a number";
        case Entry::Kind::string: return "a string";
        case Entry::Kind::string_list: return "an array of strings";
        case Entry::Kind::enumeration: return "a string";
    }
    return "?";
}

std::string toml_type_name(const toml::node& node) {
    std::ostringstream out;
    out << node.type();
    return out.str();
}

std::string quote(std::string_view text) {
    std::string out = "\"";
    for (char c : text) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\t': out += "\\t"; break;
            default: out.push_back(c);
        }
    }
    out.push_back('"');
    return out;
}

std::string join_names(const std::vector<std::string>& names) {
    std::string out;
    for (const auto& name : names) {
        out += out.empty() ? "" : ", ";
        out += name;
    }
    return out;
}

Status set_integer_checked(const Entry& entry, std::int64_t value, std::string_view where) {
    if (value < entry.integer_min || value > entry.integer_max) {
        return Error{Errc::out_of_range, std::string(where) + entry.path + " = " +
                                             std::to_string(value) + " is outside [" +
                                             std::to_string(entry.integer_min) + ", " +
                                             std::to_string(entry.integer_max) + "]"};
    }
    entry.set_integer(value);
    return {};
}

Status set_enum_checked(const Entry& entry, std::string_view value, std::string_view where) {
    for (std::size_t i = 0; i < entry.enum_names.size(); ++i) {
        if (entry.enum_names[i] == value) {
            entry.set_enum(i);
            return {};
        }
    }
    return Error{Errc::invalid_value, std::string(where) + entry.path + " = \"" +
                                          std::string(value) +
                                          "\" is not one of: " + join_names(entry.enum_names)};
}

Status apply_node(const Entry& entry, const toml::node& node, const std::string& where) {
    auto wrong = [&] {
        return Error{Errc::wrong_type, where + entry.path + " must be " +
                                           std::string(kind_name(entry.kind)) + ", not " +
                                           toml_type_name(node)};
    };
    switch (entry.kind) {
        case Entry::Kind::boolean:
            if (auto v = node.as_boolean()) {
                entry.set_bool(v->get());
                return {};
            }
            return wrong();
        case Entry::Kind::integer:
            if (auto v = node.as_integer()) {
                return set_integer_checked(entry, v->get(), where);
            }
            return wrong();
        case Entry::Kind::floating:
            if (auto v = node.as_floating_point()) {
                entry.set_floating(v->get());
                return {};
            }
            if (auto v = node.as_integer()) {
                entry.set_floating(static_cast<double>(v->get()));
                return {};
            }
            return wrong();
        case Entry::Kind::string:
            if (auto v = node.as_string()) {
                entry.set_string(v->get());
                return {};
            }
            return wrong();
        case Entry::Kind::enumeration:
            if (auto v = node.as_string()) {
                return set_enum_checked(entry, v->get(), where);
            }
            return wrong();
        case Entry::Kind::string_list:
            if (auto array = node.as_array()) {
                std::vector<std::string> values;
                for (const auto& item : *array) {
                    auto text = item.as_string();
                    if (!text) {
                        return wrong();
                    }
                    values.push_back(text->get());
                }
                entry.set_string_list(std::move(values));
                return {};
            }
            return wrong();
    }
    return wrong();
}

}  // namespace

const std::error_category& error_category() noexcept {
    static const EnumErrorCategory<Errc, describe> category("config", "config error ");
    return category;
}

void Schema::add(Entry entry) {
    QUEEN_ASSERT(find(entry.path) == nullptr, "config key declared twice: ", entry.path);
    entries_.push_back(std::move(entry));
}

void Schema::add_section(std::string path, std::string doc) {
    sections_.emplace_back(std::move(path), std::move(doc));
}

void Schema::add_bool(std::string path, bool* target, std::string doc) {
    Entry entry;
    entry.path = std::move(path);
    entry.doc = std::move(doc);
    entry.kind = Entry::Kind::boolean;
    entry.set_bool = [target](bool value) { *target = value; };
    entry.get_bool = [target] { return *target; };
    add(std::move(entry));
}

void Schema::add_double(std::string path, double* target, std::string doc) {
    Entry entry;
    entry.path = std::move(path);
    entry.doc = std::move(doc);
    entry.kind = Entry::Kind::floating;
    entry.set_floating = [target](double value) { *target = value; };
    entry.get_floating = [target] { return *target; };
    add(std::move(entry));
}

void Schema::add_string(std::string path, std::string* target, std::string doc) {
    Entry entry;
    entry.path = std::move(path);
    entry.doc = std::move(doc);
    entry.kind = Entry::Kind::string;
    entry.set_string = [target](std::string value) { *target = std::move(value); };
    entry.get_string = [target] { return *target; };
    add(std::move(entry));
}

void Schema::add_secret(std::string path, std::string* target, std::string doc) {
    add_string(std::move(path), target, std::move(doc));
    entries_.back().is_secret = true;
}

void Schema::add_path(std::string path, std::filesystem::path* target, std::string doc) {
    Entry entry;
    entry.path = std::move(path);
    entry.doc = std::move(doc);
    entry.kind = Entry::Kind::string;
    entry.set_string = [target](std::string value) { *target = std::move(value); };
    entry.get_string = [target] { return target->string(); };
    add(std::move(entry));
}

void Schema::add_string_list(std::string path, std::vector<std::string>* target, std::string doc) {
    Entry entry;
    entry.path = std::move(path);
    entry.doc = std::move(doc);
    entry.kind = Entry::Kind::string_list;
    entry.set_string_list = [target](std::vector<std::string> value) {
        *target = std::move(value);
    };
    entry.get_string_list = [target] { return *target; };
    add(std::move(entry));
}

void Schema::add_removed(std::string path, std::string replacement) {
    QUEEN_ASSERT(find(path) == nullptr, "config key both declared and removed: ", path);
    removed_.emplace_back(std::move(path), std::move(replacement));
}

Error Schema::unknown_key(const std::string& where, std::string_view path) const {
    for (const auto& [removed, replacement] : removed_) {
        if (removed == path) {
            return Error{Errc::unknown_key,
                         where + removed + " is no longer a setting: " + replacement};
        }
    }
    return Error{Errc::unknown_key, where + std::string(path)};
}

const Entry* Schema::find(std::string_view path) const noexcept {
    for (const auto& entry : entries_) {
        if (entry.path == path) {
            return &entry;
        }
    }
    return nullptr;
}

Status Schema::load_file(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
        return Error{Errc::io, file.string()};
    }
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) {
        return Error{Errc::io, file.string()};
    }
    return load_string(text.str(), file.string());
}

Status Schema::load_string(std::string_view text, std::string_view source) {
    toml::table root;
    try {
        root = toml::parse(text, source);
    } catch (const toml::parse_error& error) {
        std::ostringstream where;
        where << source << ":" << error.source().begin.line << ":" << error.source().begin.column
              << ": " << error.description();
        return Error{Errc::syntax, where.str()};
    }
    const std::string where = std::string(source) + ": ";
    // Walk the document; every leaf must be a declared key, every table a prefix of one.
    std::function<Status(const toml::table&, const std::string&)> walk =
        [&](const toml::table& table, const std::string& prefix) -> Status {
        for (const auto& [key, node] : table) {
            const std::string path =
                prefix.empty() ? std::string(key.str()) : prefix + "." + std::string(key.str());
            if (const Entry* entry = find(path)) {
                QUEEN_TRY(apply_node(*entry, node, where));
                continue;
            }
            if (const auto* sub = node.as_table()) {
                // A table of removed keys only is walked too, so the error names the key.
                const auto is_under = [&path](const std::string& declared) {
                    return declared.size() > path.size() &&
                           declared.compare(0, path.size(), path) == 0 &&
                           declared[path.size()] == '.';
                };
                bool is_prefix = false;
                for (const auto& entry : entries_) {
                    is_prefix = is_prefix || is_under(entry.path);
                }
                for (const auto& removed : removed_) {
                    is_prefix = is_prefix || is_under(removed.first);
                }
                if (is_prefix) {
                    QUEEN_TRY(walk(*sub, path));
                    continue;
                }
            }
            return unknown_key(where, path);
        }
        return {};
    };
    return walk(root, "");
}

Status Schema::set(std::string_view path, std::string_view value) {
    const Entry* entry = find(path);
    if (entry == nullptr) {
        return unknown_key("", path);
    }
    const std::string where;
    switch (entry->kind) {
        case Entry::Kind::boolean:
            if (value == "true" || value == "false") {
                entry->set_bool(value == "true");
                return {};
            }
            return Error{Errc::wrong_type, entry->path + " must be true or false, not \"" +
                                               std::string(value) + "\""};
        case Entry::Kind::integer: {
            std::int64_t number = 0;
            const auto [end, ec] =
                std::from_chars(value.data(), value.data() + value.size(), number);
            if (ec != std::errc{} || end != value.data() + value.size()) {
                return Error{Errc::wrong_type, entry->path + " must be an integer, not \"" +
                                                   std::string(value) + "\""};
            }
            return set_integer_checked(*entry, number, where);
        }
        case Entry::Kind::floating: {
            try {
                std::size_t used = 0;
                const double number = std::stod(std::string(value), &used);
                if (used != value.size()) {
                    throw std::invalid_argument("trailing");
                }
                entry->set_floating(number);
                return {};
            } catch (const std::exception&) {
                return Error{Errc::wrong_type,
                             entry->path + " must be a number, not \"" + std::string(value) + "\""};
            }
        }
        case Entry::Kind::string: entry->set_string(std::string(value)); return {};
        case Entry::Kind::enumeration: return set_enum_checked(*entry, value, where);
        case Entry::Kind::string_list: {
            std::vector<std::string> items;
            std::size_t start = 0;
            while (start <= value.size() && !value.empty()) {
                const std::size_t comma = value.find(',', start);
                const std::size_t stop = comma == std::string_view::npos ? value.size() : comma;
                items.emplace_back(value.substr(start, stop - start));
                start = stop + 1;
                if (comma == std::string_view::npos) {
                    break;
                }
            }
            entry->set_string_list(std::move(items));
            return {};
        }
    }
    return Error{Errc::invalid_value, entry->path};
}

std::string Schema::render() const {
    // Group keys by their table, in declaration order of first appearance.
    std::vector<std::string> tables;
    std::map<std::string, std::vector<const Entry*>> by_table;
    for (const auto& entry : entries_) {
        const auto dot = entry.path.rfind('.');
        const std::string table = dot == std::string::npos ? "" : entry.path.substr(0, dot);
        if (!by_table.contains(table)) {
            // Keys outside any table must come before the first [table] header.
            if (table.empty()) {
                tables.insert(tables.begin(), table);
            } else {
                tables.push_back(table);
            }
        }
        by_table[table].push_back(&entry);
    }
    std::ostringstream out;
    bool first = true;
    for (const auto& table : tables) {
        if (!first) {
            out << "\n";
        }
        first = false;
        if (!table.empty()) {
            for (const auto& [path, doc] : sections_) {
                if (path == table && !doc.empty()) {
                    out << "# " << doc << "\n";
                }
            }
            out << "[" << table << "]\n";
        }
        for (const Entry* entry : by_table[table]) {
            const auto dot = entry->path.rfind('.');
            const std::string key =
                dot == std::string::npos ? entry->path : entry->path.substr(dot + 1);
            if (!entry->doc.empty()) {
                out << "# " << entry->doc;
                if (entry->kind == Entry::Kind::enumeration) {
                    out << " (" << join_names(entry->enum_names) << ")";
                }
                out << "\n";
            }
            out << key << " = ";
            switch (entry->kind) {
                case Entry::Kind::boolean: out << (entry->get_bool() ? "true" : "false"); break;
                case Entry::Kind::integer: out << entry->get_integer(); break;
                case Entry::Kind::floating: {
                    std::ostringstream number;
                    number << entry->get_floating();
                    std::string text = number.str();
                    if (text.find_first_of(".eE") == std::string::npos &&
                        text.find("inf") == std::string::npos &&
                        text.find("nan") == std::string::npos) {
                        text += ".0";
                    }
                    out << text;
                    break;
                }
                case Entry::Kind::string: {
                    const std::string value = entry->get_string();
                    out << quote(entry->is_secret && !value.empty() ? "<hidden>" : value);
                    break;
                }
                case Entry::Kind::enumeration:
                    out << quote(entry->enum_names.at(entry->get_enum()));
                    break;
                case Entry::Kind::string_list: {
                    out << "[";
                    bool first_item = true;
                    for (const auto& item : entry->get_string_list()) {
                        out << (first_item ? "" : ", ") << quote(item);
                        first_item = false;
                    }
                    out << "]";
                    break;
                }
            }
            out << "\n";
        }
    }
    return out.str();
}

}  // namespace queen::config
