// modules/node/tests/peer_support.hpp — what the node's peer-link tests share: a free loopback port
// for a peer transport to listen on.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>

#include "queen/testing/catch.hpp"

namespace queen::node::testing {

/// A port on 127.0.0.1 that was free a moment ago (bound to port 0, read back, closed).
inline std::uint16_t free_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    socklen_t size = sizeof address;
    REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) == 0);
    ::close(fd);
    return ntohs(address.sin_port);
}

}  // namespace queen::node::testing
