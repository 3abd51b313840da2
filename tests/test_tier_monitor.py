"""The tier monitor: peaks seen while files come and go, nested places, leftovers, per-node places."""

import time

from genomon_smk.runtime.tier_monitor import (COST_FACTOR, INTERMEDIATE, MIN_INTERVAL, WORK_DIR, TierMonitor,
                                              leftover_report, next_wait, tree_bytes, write_leftovers)


def wait_for_samples(monitor, count, limit=60.0):
    deadline = time.monotonic() + limit
    while monitor.samples < count:
        assert time.monotonic() < deadline, f"the monitor took {monitor.samples} sample(s) in {limit} s"
        time.sleep(0.01)


def test_peak_final_leftovers_and_nested_places(tmp_path):
    out = tmp_path / "results"
    places = {"global": str(out), "shared_tmp": str(out / ".tiers" / "shared"), "node_local": "$TMPDIR/x"}
    (out / ".tiers" / "shared").mkdir(parents=True)
    monitor = TierMonitor(places, interval=0.02)
    monitor.start()
    temp = out / ".tiers" / "shared" / "piece.bam"
    temp.write_bytes(b"x" * 5000)
    # Two more samples (the first may have begun before the file was written): counted, not
    # timed, so a loaded machine only makes the wait longer.
    wait_for_samples(monitor, monitor.samples + 2)
    temp.unlink()
    (out / "final.bam").write_bytes(b"y" * 300)
    left = out / ".tiers" / "shared" / "left.txt"
    left.write_bytes(b"z" * 7)
    table, leftovers = monitor.finish(str(out / "storage" / "tier_usage.tsv"))
    rows = {line.split("\t")[0]: line.split("\t") for line in (out / "storage" / "tier_usage.tsv").read_text().splitlines()}
    assert int(rows["shared_tmp"][2]) >= 5000 and rows["shared_tmp"][3] == "7"
    assert rows["global"][3] == "300"
    assert int(rows["global"][2]) < 5000  # the nested shared_tmp place is not counted as global
    assert rows["node_local"][4] == "per job, not visible from here"
    assert leftovers == [str(left)]
    assert "shared_tmp" in table and "not visible" in table
    assert monitor.samples >= 2 and "sample(s)" in table


def test_the_walks_cost_at_most_a_twentieth_of_the_time_however_many_files():
    """Between walks the monitor waits 2 s, or 20 times the last walk's duration: a tier whose
    walk takes 6 s is walked every 2 min, not every 2 s."""
    assert next_wait(0.01) == MIN_INTERVAL
    assert next_wait(6.0) == 6.0 * COST_FACTOR == 120
    assert next_wait(0.001, minimum=0.02) == 0.02


def test_off_it_never_walks_while_the_run_goes_and_still_reports_leftovers(tmp_path):
    """storage.monitor off (clusters): no thread, no sample; the TSV says so, and the scratch
    leftovers are still listed at the end."""
    out = tmp_path / "results"
    shared = out / ".tiers" / "shared"
    shared.mkdir(parents=True)
    (shared / "left.txt").write_bytes(b"z" * 7)
    monitor = TierMonitor({"global": str(out), "shared_tmp": str(shared)}, enabled=False)
    monitor.start()
    assert monitor._thread is None and monitor.samples == 0
    table, leftovers = monitor.finish(str(out / "storage" / "tier_usage.tsv"))
    assert monitor.samples == 0 and leftovers == [str(shared / "left.txt")]
    rows = [line.split("\t") for line in (out / "storage" / "tier_usage.tsv").read_text().splitlines()[1:]]
    assert [row[4] for row in rows] == ["not monitored (storage.monitor)"] * 2
    assert "storage.monitor is off" in table


def test_hard_links_count_once(tmp_path):
    (tmp_path / "a").write_bytes(b"x" * 100)
    (tmp_path / "b").hardlink_to(tmp_path / "a")
    assert tree_bytes(str(tmp_path)) == 100


def test_leftovers_name_work_directories_and_intermediate_outputs(tmp_path):
    out = tmp_path / "results"
    shared = out / ".tiers" / "shared_tmp"
    work = shared / "markdup.abcd1234.pon1.r0001"
    work.mkdir(parents=True)
    (work / "bamsort.tmp").write_bytes(b"x" * 100)
    (shared / "markdup.abcd1234.pon1.r0001.sizes").write_text("100\n")
    (shared / "split" / "pon1").mkdir(parents=True)
    (shared / "split" / "pon1" / "0000_R1.fastq").write_bytes(b"y" * 50)
    (shared / "map" / "pon2").mkdir(parents=True)  # emptied by the run: not a leftover
    (shared / "markdup.ffff0000.pon1.r0001").mkdir()  # another output directory's run: not a work dir of ours
    (shared / "markdup.ffff0000.pon1.r0001" / "f").write_bytes(b"z")
    places = {"global": str(out), "shared_tmp": str(shared), "node_local": "$TMPDIR/x"}
    found = TierMonitor(places).leftovers("abcd1234")
    by_path = {item.path: item for item in found}
    other = str(shared / "markdup.ffff0000.pon1.r0001" / "f")
    assert set(by_path) == {str(work), str(shared / "split" / "pon1"), other}
    assert (by_path[str(work)].files, by_path[str(work)].bytes) == (2, 104)  # with its .sizes file
    assert by_path[str(work)].kind == WORK_DIR
    assert by_path[str(shared / "split" / "pon1")].kind == INTERMEDIATE
    assert by_path[other].kind == INTERMEDIATE
    tsv = out / "storage" / "scratch_leftovers.tsv"
    write_leftovers(found, str(tsv), "after this failed or stopped run")
    rows = [line.split("\t") for line in tsv.read_text().splitlines()]
    assert rows[0] == ["when", "tier", "path", "files", "bytes", "kind"] and len(rows) == 4
    report = leftover_report(found, "after this failed or stopped run", str(tsv), shown=1)
    assert report.startswith(f"Left on the scratch tiers after this failed or stopped run: 3 item(s), 155 B (all listed in {tsv})")
    assert report.endswith("... and 2 more")


def test_the_user_s_own_files_in_a_tier_place_are_not_called_intermediates(tmp_path):
    """Issue 34: a user's file in the node_local place was reported as an intermediate output
    "removed once its readers finish"; only the directories the rules write hold those."""
    from genomon_smk.runtime.tier_monitor import FOREIGN, OTHER_RUN

    scratch = tmp_path / "scratch"
    (scratch / "split" / "pon1").mkdir(parents=True)
    (scratch / "split" / "pon1" / "0000_R1.fastq").write_bytes(b"y" * 50)
    (scratch / "my_notes.txt").write_text("mine\n")
    (scratch / "my_data").mkdir()
    (scratch / "my_data" / "reads.bam").write_bytes(b"b" * 10)
    (scratch / "markdup.ffff0000.pon1.r0001").mkdir()
    (scratch / "markdup.ffff0000.pon1.r0001" / "f").write_bytes(b"z")
    monitor = TierMonitor({"global": str(tmp_path / "results"), "shared_tmp": str(scratch)})
    monitor.own_dirs.update({"split", "map"})
    kinds = {item.path: item.kind for item in monitor.leftovers("abcd1234")}
    assert kinds == {str(scratch / "split" / "pon1"): INTERMEDIATE, str(scratch / "my_notes.txt"): FOREIGN,
                     str(scratch / "my_data"): FOREIGN, str(scratch / "markdup.ffff0000.pon1.r0001"): OTHER_RUN}
    assert "removed once" not in FOREIGN and "left as it is" in FOREIGN


def test_the_workflow_registers_the_directories_its_rules_write_on_the_tiers(tmp_path, testdata):
    from conftest import parse_workflow, write_config

    workflow = parse_workflow(write_config(tmp_path, testdata))
    assert {"split", "map", "markdup", "mutation"} <= workflow.globals["TIER_MONITOR"].own_dirs
