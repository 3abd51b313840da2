"""One run per output directory: the lock in the output directory (run_lock.py), its pure parts,
and two Snakemake runs from two working directories on one output directory."""

import json
import os
import signal
import socket
import subprocess
import time

from genomon_smk.runtime import run_lock
from genomon_smk.runtime.run_lock import (
    Holder,
    acquire,
    clear,
    clear_locks_of_dead_run,
    held_note,
    is_stale,
    lock_text,
    parse_lock,
    refusal,
    release,
)

from conftest import REPO, SNAKEMAKE, write_config

FIRST = Holder("node1", 4242, "/home/me/run a", "2026-01-02T03:04:05+00:00")
SECOND = Holder("node2", 77, "/home/me/run b", "2026-01-02T04:00:00+00:00")


def alive(pid):
    return True


def dead(pid):
    return False


def test_a_lock_reads_back_as_its_holder_and_anything_else_reads_as_none():
    assert parse_lock(lock_text(FIRST)) == FIRST
    for text in ("", "{", "[]", '{"host": "x"}', '{"host": "x", "pid": "many", "workdir": "", "started": ""}'):
        assert parse_lock(text) is None


def test_only_a_lock_of_this_host_whose_process_is_gone_is_stale():
    assert is_stale(FIRST, "node1", dead)
    assert not is_stale(FIRST, "node1", alive)
    assert not is_stale(FIRST, "node2", dead)  # another host's processes cannot be seen from here


def test_the_refusal_names_the_first_run_and_how_to_clear_a_lock_nobody_holds():
    message = refusal(FIRST, "/out/.genomon-smk.lock")
    for part in ("host node1", "pid 4242", "/home/me/run a", "2026-01-02T03:04:05", "snakemake --unlock",
                 "/out/.genomon-smk.lock"):
        assert part in message
    assert "cannot read" in refusal(None, "/out/.genomon-smk.lock")


def test_a_second_holder_is_refused_and_the_first_releases(tmp_path):
    path = str(tmp_path / run_lock.LOCK_NAME)
    assert acquire(path, FIRST, alive) == (True, "")
    assert acquire(path, FIRST, alive) == (True, "")  # the holder itself, again
    taken, message = acquire(path, SECOND, alive)
    assert not taken and "host node1, pid 4242" in message
    assert not release(path, SECOND) and os.path.exists(path)  # only the holder releases
    assert release(path, FIRST) and not os.path.exists(path)
    assert acquire(path, SECOND, alive) == (True, "")
    assert sorted(os.listdir(tmp_path)) == [run_lock.LOCK_NAME]  # no private files left


def test_a_stale_lock_of_this_host_is_taken_over_with_a_note(tmp_path):
    path = str(tmp_path / run_lock.LOCK_NAME)
    mine = Holder("node1", 5, "/w", "now")
    acquire(path, FIRST, alive)
    taken, note = acquire(path, mine, dead)
    assert taken and "stale" in note and "pid 4242" in note
    assert parse_lock(open(path).read()) == mine
    assert sorted(os.listdir(tmp_path)) == [run_lock.LOCK_NAME]


def test_an_unreadable_lock_is_refused_and_clear_removes_any_lock(tmp_path):
    path = tmp_path / run_lock.LOCK_NAME
    path.write_text("half a lock")
    taken, message = acquire(str(path), SECOND, dead)
    assert not taken and "cannot read" in message
    assert "removed" in clear(str(path), "node1") and not path.exists()
    assert clear(str(path), "node1") is None


def test_unlock_keeps_the_lock_of_a_run_alive_on_this_host(tmp_path):
    """Snakemake's LockException tells users to --unlock: not while the run goes on."""
    path = tmp_path / run_lock.LOCK_NAME
    path.write_text(lock_text(FIRST))
    assert "still running" in clear(str(path), FIRST.host, alive) and path.exists()
    assert "removed" in clear(str(path), "another-host", alive) and not path.exists()  # not provable from here
    path.write_text(lock_text(FIRST))
    assert "removed" in clear(str(path), FIRST.host, dead) and not path.exists()


def test_held_note_says_who_holds_the_directory_or_that_the_lock_is_stale(tmp_path):
    path = str(tmp_path / run_lock.LOCK_NAME)
    assert held_note(path, "node1", alive) is None
    acquire(path, FIRST, alive)
    assert "a run holds" in held_note(path, "node2", alive) and "pid 4242" in held_note(path, "node2", alive)
    assert "stale" in held_note(path, "node1", dead)


# --- end to end: two working directories, one output directory


def snakemake_lock_files(workdir, number, outputs, inputs):
    locks = workdir / ".snakemake" / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    (locks / f"{number}.output.lock").write_text("\n".join(outputs) + "\n")
    (locks / f"{number}.input.lock").write_text("\n".join(inputs) + "\n")


def test_a_dead_runs_snakemake_locks_on_this_output_dir_are_removed_and_no_others(tmp_path):
    """Only with the output directory's lock proving its run gone (this host, pid gone); only the
    Snakemake locks that name files of this output directory."""
    workdir, output_dir = tmp_path / "work", tmp_path / "out"
    output_dir.mkdir()
    lock = output_dir / run_lock.LOCK_NAME
    snakemake_lock_files(workdir, 0, [f"{output_dir}/bam/t/t.bam"], ["/data/t_R1.fq.gz"])
    snakemake_lock_files(workdir, 1, [f"{tmp_path}/other/bam/n.bam"], [f"{output_dir}/bam/t/t.bam"])
    lock.write_text(lock_text(Holder("node1", 4242, str(workdir), "yesterday")))

    assert clear_locks_of_dead_run(str(lock), str(output_dir), "node1", alive) is None  # still running
    assert clear_locks_of_dead_run(str(lock), str(output_dir), "node2", dead) is None  # another host's
    assert len(list((workdir / ".snakemake" / "locks").iterdir())) == 4
    note = clear_locks_of_dead_run(str(lock), str(output_dir), "node1", dead)
    assert "0.output.lock" in note and "0.input.lock" in note and "pid 4242" in note
    assert sorted(p.name for p in (workdir / ".snakemake" / "locks").iterdir()) == ["1.input.lock", "1.output.lock"]
    assert clear_locks_of_dead_run(str(lock), str(output_dir), "node1", dead) is None  # nothing left to remove


def snakemake(config, workdir, *args):
    return [SNAKEMAKE, "-s", str(REPO / "workflow" / "Snakefile"), "--profile", str(REPO / "profiles" / "local"),
            "--configfile", str(config), "--cores", "1", *args]


def test_a_second_run_on_the_same_output_dir_is_refused_while_the_first_runs(tmp_path, testdata, no_slurm_probe):
    """The first run waits in its staggered start (a minute's sleep), holding the lock; a run
    from another working directory is refused naming it, a dry run says who holds it; killed
    with SIGKILL, the first run leaves a stale lock that the next run on this host takes over;
    `snakemake --unlock` clears a lock."""
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("tumor\tnormal\tpanel\ntumor\tnormal\tpanel1\npon1\tpon2\t\n")  # pon1 starts a minute late
    output_dir = tmp_path / "out"
    config = write_config(tmp_path / "config", testdata, output_dir=str(output_dir), pairs=str(pairs),
                          stagger_minutes=1)
    lock = output_dir / run_lock.LOCK_NAME
    first_dir, second_dir = tmp_path / "first", tmp_path / "second"
    first_dir.mkdir()
    second_dir.mkdir()
    waiting = str(output_dir / "stagger" / "pon1.started")
    with open(tmp_path / "first.out", "w") as log:
        first = subprocess.Popen(snakemake(config, first_dir, waiting), cwd=first_dir, stdout=log,
                                 stderr=subprocess.STDOUT, start_new_session=True, env=no_slurm_probe)
    try:
        deadline = time.monotonic() + 40
        while not lock.exists() and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        holder = json.loads(lock.read_text())
        assert (holder["pid"], holder["host"], holder["workdir"]) == (first.pid, socket.gethostname(), str(first_dir))

        second = subprocess.run(snakemake(config, second_dir, waiting), cwd=second_dir, capture_output=True,
                                text=True, env=no_slurm_probe)
        output = second.stdout + second.stderr
        assert second.returncode != 0
        assert f"another genomon-smk run is using this output directory (host {socket.gethostname()}, " \
               f"pid {first.pid}" in output and "snakemake --unlock" in output
        assert first.poll() is None and json.loads(lock.read_text())["pid"] == first.pid

        dry = subprocess.run(snakemake(config, second_dir, "-n", waiting), cwd=second_dir, capture_output=True,
                             text=True, env=no_slurm_probe)
        assert dry.returncode == 0 and f"a run holds this output directory (host {socket.gethostname()}, " \
                                       f"pid {first.pid}" in dry.stderr
        unlock = subprocess.run(snakemake(config, first_dir, "--unlock"), cwd=first_dir, capture_output=True,
                                text=True, env=no_slurm_probe)
        assert "its run is still running" in unlock.stderr and json.loads(lock.read_text())["pid"] == first.pid
        assert list((first_dir / ".snakemake" / "locks").glob("*.lock"))  # Snakemake's kept too
    finally:
        os.killpg(first.pid, signal.SIGKILL)  # no handler runs: the lock stays behind
        first.wait()
    assert json.loads(lock.read_text())["pid"] == first.pid

    # The same command from the same directory resumes: the first run's Snakemake locks there
    # are removed, as the output directory's lock proves that run gone (the config retuned to a
    # short wait, as a user would the next day).
    config.write_text(config.read_text().replace("stagger_minutes: 1", "stagger_minutes: 0.01"))
    third = subprocess.run(snakemake(config, first_dir, waiting), cwd=first_dir, capture_output=True, text=True,
                           env=no_slurm_probe)
    assert third.returncode == 0, third.stdout + third.stderr
    assert f"taking over the stale lock {lock}" in third.stderr and f"pid {first.pid}" in third.stderr
    assert "removed its Snakemake locks" in third.stderr and "LockException" not in third.stderr
    assert not lock.exists()  # released at the end of the run
    assert not list((first_dir / ".snakemake" / "locks").glob("*.lock"))

    lock.write_text(lock_text(Holder("another-host", 1, "/elsewhere", "yesterday")))
    unlock = subprocess.run(snakemake(config, second_dir, "--unlock"), cwd=second_dir, capture_output=True,
                            text=True, env=no_slurm_probe)
    assert unlock.returncode == 0 and not lock.exists()
    assert "removed the output directory's lock" in unlock.stderr and "another-host" in unlock.stderr
