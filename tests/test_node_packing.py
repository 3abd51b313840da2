"""Whole nodes packed on PJM: profiles/pjm's job groups come from the rule table (NodeShare), fill a
Fugaku node's cores and memory (map and markdup one per CMG, as the paper), and the stage plan
prints the cohort's node-hours one PJM job per rule job, packed, and in one allocation."""

import pytest
import yaml

from conftest import REPO, parse_workflow, write_config
from genomon_smk.plan import stage_plan
from genomon_smk.plan.rules import FACTS, FUGAKU_NODE, CohortShape, NodeShare, pjm_packing

PROFILE = yaml.safe_load((REPO / "profiles" / "pjm" / "config.v8+.yaml").read_text())
PAPER_PAIR = CohortShape(samples=2, pairs=1, chunks=2712, regions=87, mutation_regions=275)


def test_the_profiles_groups_are_the_rule_tables():
    packing = pjm_packing()
    assert PROFILE["groups"] == {rule: spec["group"] for rule, spec in packing.items()}
    assert PROFILE["group-components"] == {spec["group"]: spec["per_node"] for spec in packing.values()}
    # Threads where the node share differs from the rule's own (1, or the config's for map/markdup).
    assert PROFILE["set-threads"] == {rule: spec["threads"] for rule, spec in packing.items() if spec["threads"] > 1}
    for rule in PROFILE["set-threads"]:
        assert PROFILE["set-resources"][rule]["mem_mb"] == packing[rule]["mem_mb"]


def test_every_group_fits_a_node_and_map_runs_one_job_per_cmg():
    for rule, spec in pjm_packing().items():
        assert spec["per_node"] * spec["threads"] <= FUGAKU_NODE.cores, rule
        assert spec["per_node"] * spec["mem_mb"] <= FUGAKU_NODE.mem_mb, rule
        # Full: one more job would not fit.
        assert ((spec["per_node"] + 1) * spec["threads"] > FUGAKU_NODE.cores
                or (spec["per_node"] + 1) * spec["mem_mb"] > FUGAKU_NODE.mem_mb), rule
    for rule in ("map_reads", "markdup"):
        assert FACTS[rule].node_share.threads == FUGAKU_NODE.cmg_cores == 12
        assert FACTS[rule].node_share.per_node() == FUGAKU_NODE.cmgs == 4
    # Long jobs keep their node.
    assert FACTS["sv_parse"].node_share is None


def test_per_node_is_what_fits_by_cores_and_by_memory():
    assert NodeShare(threads=1, mem_mb=2000).per_node() == 14  # memory-bound
    assert NodeShare(threads=16, mem_mb=100).per_node() == 3  # core-bound
    assert NodeShare(threads=64, mem_mb=100).per_node() == 1  # never less than one


def test_node_hours_of_a_paper_pair():
    hours = stage_plan.node_hours(PAPER_PAIR)
    map_hours = hours["map_reads"]
    assert map_hours["jobs"] == 2 * 2712
    # The paper's 98 s map job as genomon-smk runs it (0.87 of it), a whole node each.
    assert map_hours["per_job"] == pytest.approx(2 * 2712 * 98 * 0.87 / 3600)
    assert map_hours["packed"] == pytest.approx(map_hours["per_job"] / 4)
    for rule, figures in hours.items():
        assert figures["allocation"] <= figures["packed"] + 1e-9 <= figures["per_job"] + 2e-9, rule
    # The work per sample stays when the cut changes: half the chunks, jobs twice as long.
    coarse_shape = CohortShape(samples=2, pairs=1, chunks=1356, regions=87, mutation_regions=275)
    assert stage_plan.seconds_per_job(coarse_shape)["map_reads"] == pytest.approx(
        2 * stage_plan.seconds_per_job(PAPER_PAIR)["map_reads"])
    assert stage_plan.node_hours(coarse_shape)["map_reads"] == pytest.approx({**map_hours, "jobs": 2 * 1356})
    # A cohort of ten pairs costs ten times as much.
    ten = stage_plan.node_hours(CohortShape(samples=20, pairs=10, chunks=2712, regions=87, mutation_regions=275))
    assert ten["identify_mutations"]["per_job"] == pytest.approx(10 * hours["identify_mutations"]["per_job"])


def test_the_node_hours_table_has_a_row_per_stage_and_the_totals():
    table = stage_plan.node_hours_table(PAPER_PAIR)
    rows = {line.split("  ")[1].strip(): line.split()[-4:] for line in table.splitlines()[2:-1]}
    assert {"map", "markdup", "identify mutations", "total"} <= set(rows)
    total = [float(value) for value in rows["total"][1:]]
    assert total[0] > total[1] > total[2] > 0  # per job > packed > allocation


def test_the_plan_prints_node_hours_on_pjm_only(tmp_path, testdata, capsys):
    parse_workflow(write_config(tmp_path / "local", testdata))
    assert "Node-hours on 48-core nodes" not in capsys.readouterr().err
    parse_workflow(write_config(tmp_path / "pjm", testdata, cluster="pjm"))
    err = capsys.readouterr().err
    assert "Node-hours on 48-core nodes" in err and "packed (pjm)" in err
