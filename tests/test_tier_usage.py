"""The tier monitor: peaks seen while files come and go, nested places, leftovers, per-node places."""

import time

from genomon_smk.tier_usage import TierMonitor, tree_bytes


def test_peak_final_leftovers_and_nested_places(tmp_path):
    out = tmp_path / "results"
    places = {"global": str(out), "shared_tmp": str(out / ".tiers" / "shared"), "node_local": "$TMPDIR/x"}
    (out / ".tiers" / "shared").mkdir(parents=True)
    monitor = TierMonitor(places, interval=0.02)
    monitor.start()
    temp = out / ".tiers" / "shared" / "piece.bam"
    temp.write_bytes(b"x" * 5000)
    time.sleep(0.2)
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


def test_hard_links_count_once(tmp_path):
    (tmp_path / "a").write_bytes(b"x" * 100)
    (tmp_path / "b").hardlink_to(tmp_path / "a")
    assert tree_bytes(str(tmp_path)) == 100
