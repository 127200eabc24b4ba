// tests/support/src/main.cpp — the Catch2 main shared by every test executable.
#define CATCH_CONFIG_MAIN
#include "queen/testing/catch.hpp"
