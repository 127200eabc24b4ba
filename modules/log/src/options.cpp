// modules/log/src/options.cpp — Options::validate().
#include "queen/log/options.hpp"

#include <string>

#include "queen/log/format.hpp"

namespace queen::log {

Status Options::validate() const {
    auto invalid = [](std::string what) { return Error{Errc::invalid_argument, "log." + what}; };
    if (record_size_bytes_max == 0 || record_size_bytes_max > record_payload_size_limit) {
        return invalid("record_size_bytes_max must be in [1, " +
                       std::to_string(record_payload_size_limit) + "], got " +
                       std::to_string(record_size_bytes_max));
    }
    if (segment_size_bytes_max < segment_header_size + encoded_record_size(0) ||
        segment_size_bytes_max > (1ULL << 40)) {
        return invalid("segment_size_bytes_max must be in [" +
                       std::to_string(segment_header_size + encoded_record_size(0)) +
                       ", 2^40], got " + std::to_string(segment_size_bytes_max));
    }
    if (pending_bytes_max < encoded_record_size(record_size_bytes_max)) {
        return invalid("pending_bytes_max (" + std::to_string(pending_bytes_max) +
                       ") must hold one record of record_size_bytes_max plus its header (" +
                       std::to_string(encoded_record_size(record_size_bytes_max)) + ")");
    }
    if (index_interval_bytes == 0) {
        return invalid("index_interval_bytes must be > 0");
    }
    if (read_records_max == 0) {
        return invalid("read_records_max must be > 0");
    }
    return {};
}

}  // namespace queen::log
