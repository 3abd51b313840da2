"""Genomon's BAM input sections run for real: a [bam_import] sample's BAM is linked into the
layout and used as it is, a [bam_tofastq] sample given as two BAMs is mapped again from their
reads, and the later stages (QC, mutation calling) take both.

The full sheet with every DNA section is the scenario .test/config-genomon-sheet/ (run by
test_scenarios.py, and counted in a dry run by test_stage_plan.py); this run is kept to the stages
that prove the two sections, with BAMs made here from the test data (`make_input_bams`).
"""

import gzip
import hashlib
import subprocess

import pysam
import pytest

from conftest import run_snakemake, write_config

pytestmark = pytest.mark.workflow


def map_to_bam(reference, fq1, fq2, sample, bam):
    """bwa mem | samtools sort: a coordinate-sorted, indexed BAM, as another pipeline leaves it."""
    read_group = f"@RG\\tID:{sample}\\tSM:{sample}\\tPL:ILLUMINA\\tLB:{sample}"
    command = (f"bwa mem -t 2 -R '{read_group}' {reference} {fq1} {fq2} 2>/dev/null"
               f" | samtools sort -@ 2 -o {bam} - && samtools index {bam}")
    subprocess.run(["bash", "-o", "pipefail", "-c", command], check=True)
    return bam


def split_pairs(fastqs, out_dir):
    """Every second read pair into a second FASTQ pair: two lanes' worth of one sample."""
    halves = [[out_dir / f"half{half}_R{mate}.fastq" for mate in (1, 2)] for half in (1, 2)]
    for mate, source in enumerate(fastqs):
        with gzip.open(source, "rt") as handle:
            lines = handle.readlines()
        records = ["".join(lines[i:i + 4]) for i in range(0, len(lines), 4)]
        for half, paths in enumerate(halves):
            paths[mate].write_text("".join(records[half::2]))
    return halves


# Read pairs of pon3's first BAM flagged as failing the platform's QC (0x200): Genomon's
# bamtofastq leaves them out (exclude=QCFAIL), so they are not mapped again.
QC_FAILED_PAIRS = 25


def flag_qc_failed(bam, pairs):
    """Flag both mates of the first `pairs` read pairs of a sorted BAM QC-failed (0x200), in
    place; their names."""
    with pysam.AlignmentFile(str(bam)) as source:
        names = []
        for read in source.fetch(until_eof=True):
            if read.query_name not in names and len(names) < pairs:
                names.append(read.query_name)
    flagged = bam.with_name(bam.name + ".flagged")
    with pysam.AlignmentFile(str(bam)) as source:
        with pysam.AlignmentFile(str(flagged), "wb", template=source) as out:
            for read in source.fetch(until_eof=True):
                if read.query_name in names:
                    read.is_qcfail = True
                out.write(read)
    flagged.replace(bam)
    pysam.index(str(bam))
    return set(names)


def make_input_bams(testdata, out_dir):
    """The BAMs a migrating user brings: the normal's final BAM (for [bam_import]) and pon3 as two
    coordinate-sorted BAMs of half its read pairs each (for [bam_tofastq]), some of them QC-failed
    (QC_FAILED_PAIRS)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    reference = testdata / "ref" / "genome.fa"
    fastq = testdata / "fastq"
    normal = map_to_bam(reference, fastq / "normal_L1_R1.fastq.gz", fastq / "normal_L1_R2.fastq.gz", "normal",
                        out_dir / "normal.bam")
    pon3 = [
        map_to_bam(reference, fq1, fq2, "pon3", out_dir / f"pon3_part{number}.bam")
        for number, (fq1, fq2) in enumerate(split_pairs([fastq / f"pon3_L1_R{m}.fastq.gz" for m in (1, 2)], out_dir), 1)
    ]
    flag_qc_failed(pon3[0], QC_FAILED_PAIRS)
    return normal, pon3


def primary_read1(bam):
    with pysam.AlignmentFile(str(bam)) as handle:
        return [r for r in handle.fetch(until_eof=True) if r.is_read1 and not (r.is_secondary or r.is_supplementary)]


def test_imported_and_converted_bams_reach_qc_and_mutation_calling(tmp_path, testdata, truth):
    normal_bam, pon3_bams = make_input_bams(testdata, tmp_path / "inputs")
    sheet = tmp_path / "sample_sheet.csv"
    sheet.write_text(
        f"[bam_tofastq]\npon3,{';'.join(map(str, pon3_bams))}\n"
        "[bam_import]\nnormal,inputs/normal.bam\n"
        "[mutation_call]\npon3,normal,None\n"
        "[qc]\npon3\nnormal\n"
    )
    config = write_config(
        tmp_path, testdata, samples=None, pairs=None, control_panels=None, genomon_sample_sheet=str(sheet),
        output_dir=str(tmp_path / "results"), split={"chunks": 2},
        regions={"max_length": 1_000_000, "pack_bp": 1_000_000},
    )
    run_snakemake(config)
    results = tmp_path / "results"
    # [bam_import]: the BAM and its index linked (absolute targets), not mapped; md5 of the BAM.
    final = results / "bam" / "normal" / "normal.markdup.bam"
    assert final.is_symlink() and final.readlink() == normal_bam
    assert (results / "bam" / "normal" / "normal.markdup.bam.bai").readlink() == normal_bam.with_suffix(".bam.bai")
    md5 = (results / "bam" / "normal" / "normal.markdup.bam.md5").read_text().split()
    assert md5 == [hashlib.md5(normal_bam.read_bytes()).hexdigest(), "normal.markdup.bam"]
    assert not (results / "logs" / "split_fastq" / "normal.log").exists()
    # [bam_tofastq]: one conversion per BAM; every read pair of both BAMs that passed QC mapped
    # again, once, under its own name (no /1 /2), in the sample's own read group.
    assert sorted(p.name for p in (results / "logs" / "bam_to_fastq" / "pon3").iterdir()) == ["bam1.log", "bam2.log"]
    reads = primary_read1(results / "bam" / "pon3" / "pon3.markdup.bam")
    expected = {"pon3": truth["read_pairs"]["pon3"] - QC_FAILED_PAIRS, "normal": truth["read_pairs"]["normal"]}
    assert len(reads) == len({r.query_name for r in reads}) == expected["pon3"]
    assert not any(r.query_name.endswith(("/1", "/2")) for r in reads)
    assert {r.get_tag("RG") for r in reads} == {"pon3"}
    # QC: both samples' BAM statistics and coverage; the split and markdup checks for pon3 only.
    for sample in ("pon3", "normal"):
        flagstat = (results / "qc" / sample / f"{sample}.flagstat.txt").read_text()
        assert f"{2 * expected[sample]} + 0 primary" in flagstat
        assert (results / "qc" / sample / f"{sample}.coverage.tsv").is_file()
    assert "status\tOK" in (results / "qc" / "pon3" / "pon3.integrity.txt").read_text()
    assert (results / "qc" / "pon3" / "pon3.markdup_metrics.txt").is_file()
    assert not list((results / "qc" / "normal").glob("*.integrity.txt"))
    assert not list((results / "qc" / "normal").glob("*markdup_metrics*"))
    # Mutation calling took both BAMs: pon3 (converted) against normal (imported).
    with pysam.VariantFile(str(results / "mutation" / "pon3" / "pon3.genomon_mutation.result.vcf.gz")) as vcf:
        assert list(vcf.header.samples) == ["pon3", "normal"]
    # The converted FASTQ were temporary: nothing of them left on their tier.
    assert not list((results / ".tiers").rglob("bam*_R1.fastq.gz"))


def test_a_bam_imported_onto_itself_is_refused(tmp_path, testdata):
    """A run's own final BAM imported into the same output directory: the link would replace it."""
    results = tmp_path / "results"
    own = results / "bam" / "normal" / "normal.markdup.bam"
    own.parent.mkdir(parents=True)
    map_to_bam(testdata / "ref" / "genome.fa", *(testdata / "fastq" / f"pon1_L1_R{m}.fastq.gz" for m in (1, 2)), "normal", own)
    sheet = tmp_path / "sample_sheet.csv"
    sheet.write_text("[bam_import]\nnormal,results/bam/normal/normal.markdup.bam\n")
    config = write_config(tmp_path, testdata, samples=None, pairs=None, control_panels=None,
                          genomon_sample_sheet=str(sheet), output_dir=str(results))
    refused = run_snakemake(config, "-n", check=False)
    assert refused.returncode != 0
    assert (f"{sheet}:2: field 'bam': {own} is this run's own final BAM of sample 'normal'"
            in refused.stdout + refused.stderr)
    assert own.is_file() and not own.is_symlink()


def test_an_empty_qc_section_means_no_qc(tmp_path, testdata):
    from conftest import job_stats
    from test_stage_plan import printed_plan

    fastq = testdata / "fastq"
    sheet = tmp_path / "sample_sheet.tsv"
    sheet.write_text(f"[fastq]\npon1\t{fastq}/pon1_L1_R1.fastq.gz\t{fastq}/pon1_L1_R2.fastq.gz\n[qc]\n")
    config = write_config(tmp_path, testdata, samples=None, pairs=None, control_panels=None,
                          genomon_sample_sheet=str(sheet), output_dir=str(tmp_path / "results"))
    result = run_snakemake(config, "-n", "--quiet", "rules")
    snakemake = job_stats(result.stdout + result.stderr)
    assert snakemake["merge_bam"] == 1 and not {"bam_stats", "coverage", "multiqc"} & set(snakemake)
    assert printed_plan(result.stderr)[1] == {rule: n for rule, n in snakemake.items() if rule != "all"}
