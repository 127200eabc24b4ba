// queen/http/address.hpp — numeric IP addresses, as listeners and peer addresses take them.
#pragma once

#include <string>

namespace queen::http {

/// `text` is a numeric IPv4 ("10.0.0.2") or IPv6 ("::1", without brackets) address: no host
/// names, nothing to resolve.
[[nodiscard]] bool is_numeric_address(const std::string& text);

/// `text` is a loopback address (127.0.0.0/8 or ::1): a listener there serves this machine only.
[[nodiscard]] bool is_loopback_address(const std::string& text);

}  // namespace queen::http
