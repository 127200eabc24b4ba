// api/src/options.cpp — ApiOptions::validate().
#include "crypto.hpp"
#include "queen/api/api.hpp"

namespace queen::api {
namespace {

// These are fields of the ApiOptions struct that embedders fill in, not settings of the config
// file (the node sets only the encryption key), so the message names the struct.
Error invalid(std::string_view field, const std::string& why) {
    return Error{Errc::invalid_argument, "ApiOptions::" + std::string(field) + ": " + why};
}

bool is_header_token(std::string_view name) {
    if (name.empty()) {
        return false;
    }
    for (const char c : name) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        (c >= '0' && c <= '9') || c == '-' || c == '_';
        if (!ok) {
            return false;
        }
    }
    return true;
}

}  // namespace

Status ApiOptions::validate() const {
    if (json_body_bytes_max == 0) {
        return invalid("json_body_bytes_max", "must be > 0");
    }
    if (json_depth_max == 0 || json_depth_max > 512) {
        return invalid("json_depth_max",
                       "must be in [1, 512], got " + std::to_string(json_depth_max));
    }
    if (payload_bytes_max == 0 || payload_bytes_max > json_body_bytes_max) {
        return invalid("payload_bytes_max", "must be in [1, json_body_bytes_max], got " +
                                                std::to_string(payload_bytes_max));
    }
    if (push_items_max == 0) {
        return invalid("push_items_max", "must be > 0");
    }
    if (ack_items_max == 0) {
        return invalid("ack_items_max", "must be > 0");
    }
    if (transaction_operations_max == 0) {
        return invalid("transaction_operations_max", "must be > 0");
    }
    if (pop_batch_max == 0) {
        return invalid("pop_batch_max", "must be > 0");
    }
    if (pop_partitions_max == 0) {
        return invalid("pop_partitions_max", "must be > 0");
    }
    if (pop_batch_default == 0 || pop_batch_default > pop_batch_max) {
        return invalid("pop_batch_default",
                       "must be in [1, pop_batch_max], got " + std::to_string(pop_batch_default));
    }
    if (pop_timeout_ms_max <= 0) {
        return invalid("pop_timeout_ms_max", "must be > 0");
    }
    if (pop_timeout_ms_default < 0 || pop_timeout_ms_default > pop_timeout_ms_max) {
        return invalid("pop_timeout_ms_default", "must be in [0, pop_timeout_ms_max], got " +
                                                     std::to_string(pop_timeout_ms_default));
    }
    if (!pop_subscription_mode_default.empty() && pop_subscription_mode_default != "all" &&
        pop_subscription_mode_default != "new" && pop_subscription_mode_default != "new-only") {
        return invalid("pop_subscription_mode_default",
                       "must be \"\", \"all\", \"new\" or \"new-only\", got \"" +
                           pop_subscription_mode_default + "\"");
    }
    if (lease_extend_seconds_max <= 0) {
        return invalid("lease_extend_seconds_max", "must be > 0");
    }
    if (lease_extend_seconds_default <= 0 ||
        lease_extend_seconds_default > lease_extend_seconds_max) {
        return invalid("lease_extend_seconds_default",
                       "must be in [1, lease_extend_seconds_max], got " +
                           std::to_string(lease_extend_seconds_default));
    }
    if (listing_limit_max == 0) {
        return invalid("listing_limit_max", "must be > 0");
    }
    if (name_bytes_max == 0 || name_bytes_max > 400) {
        return invalid("name_bytes_max",
                       "must be in [1, 400] (LMDB keys hold at most 511 bytes), got " +
                           std::to_string(name_bytes_max));
    }
    if (queue_flags_cache_ms < 0 || queue_flags_cache_ms > 60'000) {
        return invalid("queue_flags_cache_ms",
                       "must be in [0, 60000], got " + std::to_string(queue_flags_cache_ms));
    }
    if (!encryption_key_hex.empty()) {
        const auto cipher = detail::PayloadCipher::from_hex(encryption_key_hex);
        if (!cipher) {
            return invalid("encryption_key_hex", cipher.error().context);
        }
    }
    if (!is_header_token(tenant_header)) {
        return invalid("tenant_header", "must be a header name, got \"" + tenant_header + "\"");
    }
    if (!is_tenant_name(default_tenant)) {
        return invalid("default_tenant",
                       "must be 1-64 characters of [A-Za-z0-9._-], got \"" + default_tenant + "\"");
    }
    return {};
}

bool is_tenant_name(std::string_view name) noexcept {
    if (name.empty() || name.size() > 64) {
        return false;
    }
    for (const char c : name) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
        if (!ok) {
            return false;
        }
    }
    return true;
}

}  // namespace queen::api
