"""The storage plan's arithmetic: sizes, peaks per tier, capacity refusals."""

import pytest

from genomon_smk.plan.rules import CohortShape
from genomon_smk.plan.storage_plan import (
    SV_FILT_TEMP_BYTES,
    SV_PARSE_TEMP_PER_BAM,
    human,
    over_capacity,
    parse_size,
    peaks,
    sample_uses,
    sv_uses,
)

TIERS = {
    "split_fastq": {"output": "shared_tmp"},
    "map": {"output": "shared_tmp", "temp": "node_local"},
    "markdup": {"output": "shared_tmp", "temp": "shared_tmp"},
    "merge_bam": {"output": "global", "temp": "node_local"},
}



def shape(chunks=4, regions=4, sv_pairs=0):
    """A cohort of two mapped samples, one pair."""
    return CohortShape(samples=2, pairs=1, chunks=chunks, regions=regions, mutation_regions=regions - 1,
                       sv_pairs=sv_pairs)


@pytest.mark.parametrize("text, size", [("123", 123), ("1K", 1024), ("1.5G", 3 << 29), ("2TiB", 2 << 40), (7, 7)])
def test_parse_size(text, size):
    assert parse_size(text) == size


def test_parse_size_refuses_nonsense():
    with pytest.raises(ValueError, match="not a size"):
        parse_size("lots")


def test_peaks_add_samples_on_shared_tiers_and_take_the_largest_job_on_node_local():
    one = sample_uses(10 << 30, shape(chunks=10, regions=5), tiers=TIERS)
    two = one + sample_uses(20 << 30, shape(chunks=10, regions=5), tiers=TIERS)
    peak_one, peak_two = peaks(one, 0), peaks(two, 0)
    assert peak_two["shared_tmp"] == pytest.approx(3 * peak_one["shared_tmp"])
    assert peak_two["node_local"] == pytest.approx(2 * peak_one["node_local"])  # the larger sample's chunk
    assert peak_one["node_local"] < peak_one["shared_tmp"] / 10
    assert peaks(one, 1234)["cache"] == 1234


def test_a_sample_whose_bam_is_made_counts_only_with_its_final_bam():
    made = sample_uses(1 << 30, shape(4, 4), TIERS, bam_made=True)
    assert [(use.rule, use.role) for use in made] == [("merge_bam", "output")]
    assert made[0] in sample_uses(1 << 30, shape(4, 4), TIERS)


def test_moving_a_rule_to_another_tier_moves_its_bytes():
    moved = dict(TIERS, markdup={"output": "global", "temp": "shared_tmp"})
    before, after = peaks(sample_uses(1 << 30, shape(4, 4), TIERS), 0), peaks(sample_uses(1 << 30, shape(4, 4), moved), 0)
    assert after["shared_tmp"] < before["shared_tmp"] and after["global"] > before["global"]
    assert after["shared_tmp"] + after["global"] == pytest.approx(before["shared_tmp"] + before["global"])


def test_over_capacity_names_the_tier_and_sizes():
    problems = over_capacity({"shared_tmp": 3 << 30, "node_local": 1}, {"shared_tmp": 1 << 30, "node_local": None})
    assert len(problems) == 1 and "shared_tmp" in problems[0] and human(3 << 30) in problems[0]


def test_what_the_set_up_still_builds_counts_on_global_and_its_estimate_fits_a_real_build(testdata):
    from genomon_smk.plan.reference import reference_files
    from genomon_smk.plan.regions import read_fai
    from genomon_smk.plan.setup_build import estimated_build_bytes
    from genomon_smk.plan.storage_plan import file_bytes, setup_uses

    estimate = estimated_build_bytes(read_fai(str(testdata / "ref" / "genome.fa.fai")))
    built = file_bytes(reference_files(str(testdata / "ref" / "genome.fa")))
    assert sum(estimate.values()) == pytest.approx(built, rel=0.1)
    uses = setup_uses({"reference_bwa_index": 5 << 30})
    assert peaks(uses, 0)["global"] == 5 << 30 and peaks([], 0)["global"] == 0


def test_sv_temporaries_take_the_largest_parse_and_filt_job_on_node_local_and_add_up_elsewhere():
    tiers = {"sv_parse": {"output": "global", "temp": "node_local"}, "sv_filt": {"output": "global", "temp": "node_local"}}
    uses = sv_uses([10 << 30, 40 << 30], shape(sv_pairs=2), tiers=tiers)
    assert [use.rule for use in uses] == ["sv_parse", "sv_parse", "sv_filt", "sv_filt"]
    assert peaks(uses, 0)["node_local"] == max(40 * (1 << 30) * SV_PARSE_TEMP_PER_BAM, SV_FILT_TEMP_BYTES)
    moved = dict(tiers, sv_parse={"output": "global", "temp": "shared_tmp"})
    assert peaks(sv_uses([10 << 30, 40 << 30], shape(sv_pairs=2), moved), 0)["shared_tmp"] == 50 * (1 << 30) * SV_PARSE_TEMP_PER_BAM
