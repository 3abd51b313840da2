"""A failed job names each storage tier that is out of space, with the storage plan's peak for it
(job-shell.sh's EXIT trap, genomon_smk.runtime.tier_space), before its work directory is removed."""

import subprocess
import sys

import pytest

from genomon_smk.runtime.tier_space import TierSpace, full_tier_messages, is_full, main

from conftest import REPO

JOB_SHELL = REPO / "workflow" / "scripts" / "job-shell.sh"
WORK_DIR = REPO / "workflow" / "scripts" / "job-work-dir.sh"
MIB = 1 << 20


def test_a_file_system_is_full_below_one_percent_free_and_at_most_64_mib():
    assert is_full(0, MIB) and is_full(10_000, MIB) and not is_full(11_000, MIB)
    assert is_full(63 * MIB, 1 << 50) and not is_full(65 * MIB, 1 << 50)


def test_one_message_per_full_file_system_naming_its_tiers_and_the_plans_peaks():
    spaces = [
        TierSpace("node_local", "/local/job", 3 * MIB, device=1, free=0, size=MIB),
        TierSpace("shared_tmp", "/scratch/run", 8 * MIB, device=2, free=4096, size=2 * MIB),
        TierSpace("cache", "/scratch/cache", MIB // 2, device=2, free=4096, size=2 * MIB),
        TierSpace("global", "/results", 50 * MIB, device=3, free=1 << 40, size=1 << 42),
    ]
    assert full_tier_messages(spaces) == [
        "genomon-smk: no space left on node_local (/local/job): 0 B free of 1.0 MiB when the job failed; "
        "the storage plan expected about 3.0 MiB on node_local at its peak "
        "(docs/troubleshooting.md: free space, or move the tier with storage.paths)",
        "genomon-smk: no space left on shared_tmp (/scratch/run), cache (/scratch/cache) (one file system): "
        "4.0 KiB free of 2.0 MiB when the job failed; the storage plan expected about 8.0 MiB on shared_tmp, "
        "512.0 KiB on cache at their peaks (docs/troubleshooting.md: free space, or move the tier with storage.paths)",
    ]
    assert full_tier_messages(spaces[3:]) == []


def test_a_tier_with_room_or_not_yet_made_is_not_named(tmp_path, capsys):
    assert main(["--tier", "shared_tmp", str(tmp_path / "not" / "made"), "100", "--tier", "global", str(tmp_path), "5"]) == 0
    assert capsys.readouterr().out == ""


def run_job(prefix_tiers: str, body: str, env: dict | None = None, mount: tuple[str, str, str] | None = None):
    """A job's shell as Snakemake runs it (the workflow's shell prefix, then the rule's command);
    given `mount` (place, size, listing), in a new mount namespace where place is a tmpfs of
    that size, whose files left after the job are listed into `listing`."""
    job = f"set -euo pipefail; source '{JOB_SHELL}' '{sys.executable}' {prefix_tiers}; {body}"
    command = ["bash", "-c", job]
    if mount:
        place, size, listing = mount
        command = ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
                   f"mount -t tmpfs -o size={size} tmpfs {place} || exit 97\n\"$@\"\nstatus=$?\n"
                   f"find {place} -mindepth 1 >{listing}\nexit $status\n", "sh", *command]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=60)


def test_a_job_that_fills_its_tier_names_it_in_its_log_and_stderr_and_cleans_up(tmp_path):
    place = tmp_path / "node_local"
    place.mkdir()
    probe = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "mount", "-t", "tmpfs", "tmpfs",
                            str(place)], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs in a user namespace here: {probe.stderr}")
    log = tmp_path / "job.log"
    # node_local as a job's shell expands it; another tier given by a variable that is not set.
    tiers = f"""node_local '"$LOCAL_SCRATCH"' {3 * MIB} cache '"$NOT_SET/cache"' 10 global '{tmp_path}' {5 * MIB}"""
    body = f"""source '{WORK_DIR}' "$LOCAL_SCRATCH/map.key.tumor" node_local '{log}'; head -c 3000000 /dev/zero >"$work/sorted" """
    env = {"PATH": "/usr/bin:/bin", "LOCAL_SCRATCH": str(place)}
    listing = tmp_path / "left_on_node_local.txt"
    job = run_job(tiers, body, env=env, mount=(str(place), "1m", str(listing)))
    expected = (f"genomon-smk: no space left on node_local ({place}): 0 B free of 1.0 MiB when the job failed; "
                "the storage plan expected about 3.0 MiB on node_local at its peak")
    assert job.returncode not in (0, 97), job.stderr
    assert "No space left on device" in job.stderr  # head's own word
    assert job.stderr.count("genomon-smk: no space left") == 1 and expected in job.stderr
    assert expected in log.read_text() and "genomon-smk tier-use\tnode_local\t" in log.read_text()
    assert listing.read_text() == ""  # the work directory was removed after the tier was measured


def test_a_job_failing_with_room_left_names_no_tier_and_keeps_its_exit_status(tmp_path):
    log = tmp_path / "job.log"
    job = run_job(f"shared_tmp '{tmp_path}' 100", f"""source '{WORK_DIR}' '{tmp_path}/w' shared_tmp '{log}'; exit 7""")
    assert job.returncode == 7 and "no space" not in job.stderr
    assert not (tmp_path / "w").exists()
    ok = run_job(f"shared_tmp '{tmp_path}' 100", "true")
    assert ok.returncode == 0 and ok.stderr == ""
