"""The C++ client's end-to-end cases (client_tests "[.e2e]": push, dedupe, long polls, acks, the
DLQ, transactions, transaction_then_pop, a transaction's next pop, consumer groups) against a real
`queen serve`.

QUEEN_CLIENT_TESTS names the client_tests binary (tests/CMakeLists.txt sets it)."""
import os
import subprocess
import unittest

from harness import QUEEN_BIN, ServerTestCase, seed_from_env

CLIENT_TESTS = os.environ.get("QUEEN_CLIENT_TESTS",
                              os.path.join(os.path.dirname(QUEEN_BIN), "../modules/client/client_tests"))


class ClientEndToEnd(ServerTestCase):
    def test_client_e2e_cases_pass_against_a_real_broker(self):
        if not os.access(CLIENT_TESTS, os.X_OK):
            raise AssertionError(f"{CLIENT_TESTS} is missing: build client_tests (or set QUEEN_CLIENT_TESTS)")
        seed = seed_from_env()
        env = dict(os.environ, QUEEN_E2E_URL=f"http://127.0.0.1:{self.server.port}", QUEEN_SEED=str(seed))
        out = subprocess.run([CLIENT_TESTS, "[.e2e]"], capture_output=True, text=True, timeout=300, env=env)
        self.assertEqual(out.returncode, 0, f"seed {seed}\n{out.stdout[-4000:]}\n{out.stderr[-2000:]}")
        # Every hidden case ran (a skipped case prints a warning and passes nothing).
        self.assertNotIn("QUEEN_E2E_URL is not set", out.stdout)
        self.assertIn("All tests passed", out.stdout)
        self.assertRegex(out.stdout, r"in [4-9] test cases")


if __name__ == "__main__":
    unittest.main()
