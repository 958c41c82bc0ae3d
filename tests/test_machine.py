"""The peak memory and load that genenv records beside its timings (genenv.machine)."""

import subprocess
import sys

from genenv.machine import load_average, peak_rss_mb


def test_peak_rss_of_this_process_and_of_a_child():
    child = "bytearray(200 * 2**20)"  # a child that touched 200 MiB
    subprocess.run([sys.executable, "-c", child], check=True)
    assert peak_rss_mb(children=True) >= 200
    assert peak_rss_mb() > 10  # this interpreter with pytest loaded


def test_load_average_is_three_non_negative_numbers():
    load = load_average()
    assert len(load) == 3 and all(value >= 0 for value in load)
