"""Bad input is refused before any job runs, with a message naming the problem."""

import subprocess

from conftest import REPO, SNAKEMAKE, run_snakemake, write_config
from genomon_smk.regions import make_regions


def refused(tmp_path, testdata, expected, **overrides):
    config = write_config(tmp_path, testdata, **overrides)
    result = run_snakemake(config, "-n", check=False)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert expected in output, output[-3000:]
    assert not (tmp_path / "results").exists()
    return output


def test_unknown_config_key(tmp_path, testdata):
    refused(tmp_path, testdata, "Additional properties are not allowed ('chunk_count' was unexpected)", chunk_count=3)


def test_chunk_count_of_zero(tmp_path, testdata):
    refused(tmp_path, testdata, "0 is less than the minimum of 1", split={"chunks": 0})


def test_missing_reference(tmp_path, testdata):
    refused(tmp_path, testdata, "reference: file not found", reference=str(tmp_path / "nope.fa"))


def test_reference_without_bwa_index_offers_the_command(tmp_path, testdata):
    fasta = tmp_path / "ref.fa"
    fasta.write_text((testdata / "ref" / "genome.fa").read_text())
    (tmp_path / "ref.fa.fai").write_text((testdata / "ref" / "genome.fa.fai").read_text())
    refused(tmp_path, testdata, f"build it with: bwa index {fasta}", reference=str(fasta))


def test_sample_sheet_naming_an_unknown_sample(tmp_path, testdata):
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("tumor\tnormal\tpanel\ntumor\tnormal_typo\t\n")
    refused(tmp_path, testdata, f"{pairs}:2: field 'normal': unknown sample 'normal_typo'", pairs=str(pairs))


def test_unsafe_sample_name(tmp_path, testdata):
    text = (testdata / "samples.tsv").read_text().replace("pon3\t", "pon3;rm -rf x\t")
    samples = testdata / "bad_samples.tsv"  # next to the data, so relative FASTQ paths still resolve
    samples.write_text(text)
    try:
        refused(tmp_path, testdata, "'pon3;rm -rf x' is not a safe name", samples=str(samples),
                control_panels={"panel1": ["pon1", "pon2"]})
    finally:
        samples.unlink()


def test_regions_that_do_not_cover_the_reference(tmp_path, testdata):
    bed = tmp_path / "regions.bed"
    bed.write_text("chr1\t0\t1000\n")
    refused(tmp_path, testdata, "chr1:1001-", regions={"file": str(bed)})


def test_missing_config_file_is_explained():
    result = subprocess.run([SNAKEMAKE, "-n", "--cores", "1"], cwd=REPO, capture_output=True, text=True)
    assert result.returncode != 0
    assert "no config file given: run with --configfile FILE" in result.stdout + result.stderr


def test_dry_run_shows_every_job_with_a_static_dag(tmp_path, testdata):
    config = write_config(tmp_path, testdata, split={"chunks": 3})
    result = run_snakemake(config, "-n", "--quiet", "rules")
    counts = {}
    for line in result.stdout.splitlines():
        fields = line.split()
        if len(fields) == 2 and fields[1].isdigit():
            counts[fields[0]] = int(fields[1])
    samples, chunks = 5, 3
    regions = make_regions(str(testdata / "ref" / "genome.fa.fai"), None, 40000, 0)
    assert len(regions) > 4
    assert counts["split_fastq"] == samples
    assert counts["map_reads"] == samples * chunks
    assert counts["gather_map"] == samples
    assert counts["markdup"] == samples * len(regions)
    assert counts["merge_bam"] == samples


def test_a_plan_that_exceeds_a_tier_capacity_is_refused(tmp_path, testdata):
    output = refused(
        tmp_path, testdata, "storage tier shared_tmp: the plan needs about",
        storage={"capacity": {"shared_tmp": "1M"}},
    )
    assert "capacity is 1.0 MiB" in output


def test_dry_run_prints_the_storage_plan(tmp_path, testdata):
    config = write_config(tmp_path, testdata, storage={"capacity": {"node_local": "10G"}})
    result = run_snakemake(config, "-n")
    plan = result.stderr[result.stderr.index("Storage plan"):]
    assert "map                 temp    node_local" in plan
    assert "shared_tmp" in plan and "10.0 GiB" in plan


def test_panel_bam_without_index_is_refused_with_the_command_that_builds_it(tmp_path, testdata):
    (tmp_path / "panel").mkdir()
    (tmp_path / "panel" / "other.bam").write_bytes(b"")
    expected = f"BAM has no index (.bam.bai or .bai): {tmp_path / 'panel' / 'other.bam'}; build it with: samtools index"
    refused(tmp_path, testdata, expected, control_panels={"panel1": ["pon1", "panel/other.bam"]})
