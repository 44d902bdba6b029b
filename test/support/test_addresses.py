"""The loopback addresses of a Python test, as test_addresses.h gives them to the C++ ones: the
block with_test_addresses claimed for this run and passed in ROCE_TEST_ADDRESSES (16 addresses,
separated by spaces). Run the test under with_test_addresses (its ctest command does)."""
import os
import sys


def test_addresses():
    """The claimed block's addresses; exits with what to do when there is none."""
    text = os.environ.get("ROCE_TEST_ADDRESSES")
    if not text:
        sys.exit("ROCE_TEST_ADDRESSES is not set: run this under test/support's with_test_addresses, "
                 "which claims the loopback addresses the devices use")
    return text.split()
