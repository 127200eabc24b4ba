"""The C++ streams runner (modules/client, queen/client/streams.hpp) against a real `queen serve`:
the hidden client_tests cases "[.streams-e2e]" (tumbling sums of two partitions with a runner
thrown away and one that dies before its cycle, every result once; late corrections, sessions and
the idle flush; the 409 of a changed chain and the reset's fence), and the two stream examples
with known input and asserted output.

QUEEN_CLIENT_TESTS names the client_tests binary, QUEEN_EXAMPLES_DIR the examples' directory
(tests/CMakeLists.txt sets both)."""
import json
import os
import subprocess
import unittest

from harness import QUEEN_BIN, ServerTestCase, seed_from_env

CLIENT_TESTS = os.environ.get("QUEEN_CLIENT_TESTS",
                              os.path.join(os.path.dirname(QUEEN_BIN), "../modules/client/client_tests"))
EXAMPLES_DIR = os.environ.get("QUEEN_EXAMPLES_DIR", os.path.join(os.path.dirname(QUEEN_BIN), "../examples"))


class StreamsClient(ServerTestCase):
    def test_streams_e2e_cases_pass_against_a_real_broker(self):
        if not os.access(CLIENT_TESTS, os.X_OK):
            raise AssertionError(f"{CLIENT_TESTS} is missing: build client_tests (or set QUEEN_CLIENT_TESTS)")
        seed = seed_from_env()
        env = dict(os.environ, QUEEN_E2E_URL=f"http://127.0.0.1:{self.server.port}", QUEEN_SEED=str(seed))
        out = subprocess.run([CLIENT_TESTS, "[.streams-e2e]"], capture_output=True, text=True, timeout=300, env=env)
        self.assertEqual(out.returncode, 0, f"seed {seed}\n{out.stdout[-4000:]}\n{out.stderr[-2000:]}")
        self.assertNotIn("QUEEN_E2E_URL is not set", out.stdout)
        self.assertIn("All tests passed", out.stdout)
        self.assertRegex(out.stdout, r"in 3 test cases")
