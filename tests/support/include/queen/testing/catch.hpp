// queen/testing/catch.hpp — the one place Catch2 is included (v2 from Debian), so a move to v3
// touches one file.
#pragma once

#include <catch2/catch.hpp>
