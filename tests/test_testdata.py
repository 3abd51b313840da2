"""Tests of the deterministic test-data generator `.test/make_testdata.py` (preset `test`).

The generator runs a few times per module (~4 s each); one tumor/normal alignment with
bwa mem proves that the truth VCFs describe the simulated reads.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pysam
import pytest

REPO = Path(__file__).resolve().parents[1]
GENERATOR = REPO / ".test" / "make_testdata.py"
SEED = 7
TOOLS = ("samtools", "bwa", "bcftools", "tabix", "art_illumina", "wgsim")

pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.skipif(any(shutil.which(t) is None for t in TOOLS)
                       or not Path("/usr/share/doc/vt/examples/ref/20.fa.gz").exists(),
                       reason="needs samtools, bwa, bcftools, tabix, ART, wgsim and vt-examples"),
]


def generate(outdir: Path, *extra: str) -> subprocess.CompletedProcess:
    """Run the generator with the test preset; returns the finished process."""
    cmd = [sys.executable, str(GENERATOR), str(outdir), "--preset", "test", *extra]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc


def fastq_md5s(outdir: Path) -> dict[str, str]:
    """md5 of the decompressed content of every FASTQ file."""
    return {p.name: hashlib.md5(gzip.decompress(p.read_bytes())).hexdigest()
            for p in sorted((outdir / "fastq").glob("*.fastq.gz"))}


def vcf_records(path: Path) -> list[str]:
    """Data lines of a VCF as printed by `bcftools view -H` (this also proves it parses)."""
    out = subprocess.run(["bcftools", "view", "-H", str(path)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


def read_fastq(path: Path) -> tuple[list[bytes], list[bytes]]:
    """(names, sequences) of a gzipped FASTQ file."""
    lines = gzip.decompress(path.read_bytes()).split(b"\n")
    assert lines[-1] == b"" and (len(lines) - 1) % 4 == 0
    return lines[0:-1:4], lines[1:-1:4]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """The test preset generated once."""
    outdir = tmp_path_factory.mktemp("data") / "set"
    generate(outdir, "--seed", str(SEED))
    return outdir


@pytest.fixture(scope="module")
def data(dataset):
    return dataset


@pytest.fixture(scope="module")
def meta(data):
    return json.loads((data / "truth" / "meta.json").read_text())


@pytest.fixture(scope="module")
def rerun_same_seed(tmp_path_factory):
    outdir = tmp_path_factory.mktemp("again") / "set"
    generate(outdir, "--seed", str(SEED))
    return outdir


@pytest.fixture(scope="module")
def other_seed_over_interrupted(tmp_path_factory):
    """A different seed generated into a directory left behind by an interrupted run."""
    outdir = tmp_path_factory.mktemp("other") / "set"
    (outdir / "fastq").mkdir(parents=True)
    (outdir / "fastq" / "stale_L1_R1.fastq.gz").write_bytes(b"junk")
    (outdir / "truth").mkdir()
    (outdir / "truth" / "meta.json").write_text("{}")
    generate(outdir, "--seed", str(SEED + 1))
    return outdir


# --------------------------------------------------------------------------- determinism

def test_same_seed_gives_identical_fastq_and_vcf(data, rerun_same_seed):
    assert fastq_md5s(data) == fastq_md5s(rerun_same_seed)
    assert len(fastq_md5s(data)) == 12
    for name in ("somatic", "artifacts", "germline"):
        assert vcf_records(data / "truth" / f"{name}.vcf.gz") == \
            vcf_records(rerun_same_seed / "truth" / f"{name}.vcf.gz")
    assert (data / "ref" / "genome.fa").read_bytes() == \
        (rerun_same_seed / "ref" / "genome.fa").read_bytes()
    for name in ("genome.fa.gz", "simpleRepeat.txt.gz"):
        assert (data / "bare" / name).read_bytes() == (rerun_same_seed / "bare" / name).read_bytes(), name
    assert (data / "genes.gtf").read_bytes() == (rerun_same_seed / "genes.gtf").read_bytes()


def test_other_seed_differs_and_interrupted_run_is_replaced(data, other_seed_over_interrupted):
    other = other_seed_over_interrupted
    first, second = fastq_md5s(data), fastq_md5s(other)
    assert first.keys() == second.keys()  # the stale file of the interrupted run is gone
    assert all(first[k] != second[k] for k in first)
    assert vcf_records(data / "truth" / "somatic.vcf.gz") != \
        vcf_records(other / "truth" / "somatic.vcf.gz")
    assert json.loads((other / "truth" / "meta.json").read_text())["seed"] == SEED + 1
    assert (other / ".complete").exists() and not (other / ".work").exists()


def test_rerun_is_up_to_date_and_leaves_files_alone(data):
    fastq = data / "fastq" / "normal_L1_R1.fastq.gz"
    before = fastq.stat().st_mtime_ns
    proc = generate(data, "--seed", str(SEED))
    assert "up to date" in proc.stdout
    assert fastq.stat().st_mtime_ns == before


# --------------------------------------------------------------------------- layout

def test_bare_inputs_are_the_reference_gzipped_and_its_tandem_repeats_in_ucsc_format(data):
    """bare/: what a new user brings (the set-up rules build the rest; tests/test_setup_build.py)."""
    plain = (data / "ref" / "genome.fa").read_bytes()
    assert (data / "bare" / "genome.fa.gz").read_bytes()[:2] == b"\x1f\x8b"
    assert gzip.decompress((data / "bare" / "genome.fa.gz").read_bytes()) == plain
    assert not list((data / "bare").glob("*.fai"))
    with pysam.FastaFile(str(data / "ref" / "genome.fa")) as fasta:
        sequences = {name: fasta.fetch(name) for name in fasta.references}
    rows = [line.split("\t") for line in gzip.decompress((data / "bare" / "simpleRepeat.txt.gz").read_bytes())
            .decode().splitlines()]
    assert len(rows) >= 10
    for row in rows:
        bin_, chrom, start, end, period = int(row[0]), row[1], int(row[2]), int(row[3]), int(row[5])
        assert len(row) == 17 and bin_ == 585  # UCSC's bin of any span within the first 128 kb
        span = sequences[chrom][start:end]
        matches = sum(a == b for a, b in zip(span, span[period:]))
        # TRF's scoring (match 2, mismatch 7) of the span against itself one unit on.
        assert 2 * matches - 7 * (len(span) - period - matches) == int(row[10]) >= 50, row
        assert row[16] == span[:period]


def test_sample_sheets(data, meta):
    rows = [line.split("\t") for line in (data / "samples.tsv").read_text().splitlines()]
    assert rows[0] == ["sample", "fq1", "fq2", "platform", "library"]
    lanes = Counter(r[0] for r in rows[1:])
    assert lanes == {"tumor": 2, "normal": 1, "pon1": 1, "pon2": 1, "pon3": 1}
    for sample, fq1, fq2, platform, library in rows[1:]:
        assert (data / fq1).exists() and (data / fq2).exists()
        assert "_R1." in fq1 and fq2 == fq1.replace("_R1.", "_R2.")
        assert platform == "ILLUMINA" and library
    pairs = [line.split("\t") for line in (data / "pairs.tsv").read_text().splitlines()]
    assert pairs == [["tumor", "normal", "panel"], ["tumor", "normal", "panel1"]]
    assert set(meta["read_pairs"]) == set(lanes)


def test_reference_is_indexed_real_chr20(data, meta):
    ref = data / "ref" / "genome.fa"
    for suffix in (".fai", ".amb", ".ann", ".bwt", ".pac", ".sa"):
        assert Path(str(ref) + suffix).stat().st_size > 0
    dict_lines = (data / "ref" / "genome.dict").read_text().splitlines()
    assert [line.split("\t")[1] for line in dict_lines[1:]] == ["SN:chr1", "SN:chr2", "SN:chr3"]
    with pysam.FastaFile(str(ref)) as fasta, \
            pysam.FastaFile("/usr/share/doc/vt/examples/ref/20.fa.gz") as chr20:
        assert 150_000 <= sum(fasta.lengths) <= 200_000
        for contig in meta["contigs"]:
            seq = fasta.fetch(contig["name"])
            assert len(seq) == contig["length"] and "N" not in seq
            assert seq == chr20.fetch(contig["source_chrom"], contig["source_start"] - 1,
                                      contig["source_end"]).upper()


# --------------------------------------------------------------------------- reads

def test_fastq_counts_names_and_duplicates(data, meta):
    for sample, lanes in meta["read_pairs_per_lane"].items():
        seqs: list[tuple[bytes, bytes]] = []
        names_seen: list[bytes] = []
        for lane, count in lanes.items():
            names1, seqs1 = read_fastq(data / "fastq" / f"{sample}_{lane}_R1.fastq.gz")
            names2, seqs2 = read_fastq(data / "fastq" / f"{sample}_{lane}_R2.fastq.gz")
            assert len(names1) == len(names2) == count
            assert names1 == names2
            seqs += zip(seqs1, seqs2)
            names_seen += names1
        total = meta["read_pairs"][sample]
        assert len(seqs) == total == sum(lanes.values())
        assert len(set(names_seen)) == total
        assert all(n.startswith(b"@%s:" % sample.encode()) for n in names_seen)
        # exact copies of a read pair = PCR duplicates (+ rare chance collisions)
        copies = total - len(set(seqs))
        dups = meta["duplicate_pairs"][sample]
        assert dups <= copies <= dups * 1.1 + 5
        assert dups / total == pytest.approx(0.05, abs=0.003)
        assert all(len(s1) == len(s2) == meta["read_length"] for s1, s2 in seqs[:1000])


def test_reads_are_shuffled(data):
    """Haplotype components are interleaved: positions of consecutive reads look random."""
    names, seqs = read_fastq(data / "fastq" / "normal_L1_R1.fastq.gz")
    with pysam.FastaFile(str(data / "ref" / "genome.fa")) as fasta:
        chr1 = fasta.fetch("chr1")
    # where the first 200 reads that match chr1 exactly start: not sorted
    starts = [chr1.find(s.decode()) for s in seqs[:2000]]
    starts = [s for s in starts if s >= 0][:200]
    assert len(starts) > 20 and starts != sorted(starts)


# --------------------------------------------------------------------------- truth

def test_truth_vcfs(data, meta):
    somatic = list(pysam.VariantFile(str(data / "truth" / "somatic.vcf.gz")))
    artifacts = list(pysam.VariantFile(str(data / "truth" / "artifacts.vcf.gz")))
    germline = list(pysam.VariantFile(str(data / "truth" / "germline.vcf.gz")))
    for name in ("somatic", "artifacts", "germline"):
        path = data / "truth" / f"{name}.vcf.gz"
        assert Path(str(path) + ".tbi").exists()
        header = pysam.VariantFile(str(path)).header
        assert list(header.contigs) == ["chr1", "chr2", "chr3"]
    counts = meta["counts"]
    assert len(somatic) == counts["somatic"] and len(artifacts) == counts["artifacts"]
    assert len(germline) == counts["germline"]
    assert 30 <= counts["somatic_snv"] <= 40 and 6 <= counts["somatic_indel"] <= 10
    assert 8 <= counts["artifacts"] <= 12

    clonal = [v for v in somatic if v.info.get("CLONAL")]
    assert 0 < len(clonal) < len(somatic)
    assert {round(v.info["VAF"], 4) for v in clonal} == {0.4}
    assert {round(v.info["VAF"], 4) for v in somatic if not v.info.get("CLONAL")} == {0.12}
    assert {round(v.info["VAF"], 4) for v in artifacts} == {0.25}
    assert {round(v.info["NORMAL_VAF"], 4) for v in artifacts} == {0.01}
    for v in somatic:
        is_snv = len(v.ref) == len(v.alts[0]) == 1
        assert v.info["VT"] == ("SNV" if is_snv else "INDEL")
        assert is_snv or 1 <= abs(len(v.ref) - len(v.alts[0])) <= 12

    # spacing: >= 300 bp from window ends and between somatic/artifact sites,
    # and never overlapping a germline variant
    names = [c["name"] for c in meta["contigs"]]
    lengths = {c["name"]: c["length"] for c in meta["contigs"]}
    sites = sorted((names.index(v.chrom), v.pos) for v in somatic + artifacts)
    for (c1, p1), (c2, p2) in zip(sites, sites[1:]):
        assert c1 != c2 or p2 - p1 >= 300
    germ = {(v.chrom, p) for v in germline for p in range(v.pos, v.pos + len(v.ref))}
    for v in somatic + artifacts:
        assert 300 <= v.pos <= lengths[v.chrom] - 300
        assert not any((v.chrom, p) in germ for p in range(v.pos, v.pos + len(v.ref)))


def test_hotspot_database_names_the_planted_subclonal_snvs_and_unmutated_sites(data, meta):
    rows = [line.split("\t") for line in (data / "hotspot_database.txt").read_text().splitlines()]
    assert len(rows) == meta["counts"]["hotspot_database_rows"] and {len(row) for row in rows} == {7}
    kinds = {kind: [tuple(row[:5]) for row in rows if row[6] == kind] for kind in
             ("planted", "other_alt", "decoy", "germline", "mnv")}
    assert sum(map(len, kinds.values())) == len(rows) and all(kinds.values())
    planted = list(pysam.VariantFile(str(data / "truth" / "hotspot.vcf.gz")))
    assert len(planted) == meta["counts"]["hotspot_snv"] >= 10
    assert {(v.chrom, str(v.pos), str(v.pos), v.ref, v.alts[0]) for v in planted} == set(kinds["planted"])
    assert {round(v.info["VAF"], 4) for v in planted} == {0.12}
    germline = {(v.chrom, v.pos, v.ref, v.alts[0]) for v in pysam.VariantFile(str(data / "truth" / "germline.vcf.gz"))}
    assert {(c, int(s), r, a) for c, s, _, r, a in kinds["germline"]} <= germline
    # the planted and decoy sites keep 300 bp from every other somatic, artifact or hotspot site
    others = [(v.chrom, v.pos) for name in ("somatic", "artifacts") for v in pysam.VariantFile(str(data / "truth" / f"{name}.vcf.gz"))]
    sites = sorted({(c, int(s)) for c, s, *_ in kinds["planted"] + kinds["decoy"]})
    for chrom, pos in sites:
        assert all(c != chrom or abs(p - pos) >= 300 for c, p in others + [x for x in sites if x != (chrom, pos)])
    assert [row[:3] for row in rows] == sorted((row[:3] for row in rows),
                                               key=lambda r: (r[0], int(r[1]), int(r[2])))


def test_bcftools_norm_leaves_truth_unchanged(data):
    """The truth is already left-aligned: normalising again changes no record."""
    for name in ("somatic", "artifacts", "germline"):
        path = data / "truth" / f"{name}.vcf.gz"
        out = subprocess.run(["bcftools", "norm", "-f", str(data / "ref" / "genome.fa"),
                              "-c", "e", "-Ov", str(path)],
                             capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        normed = [line for line in out.stdout.splitlines() if not line.startswith("#")]
        assert normed == vcf_records(path)


# --------------------------------------------------------------------------- truth vs reads

def align(data: Path, sample: str, workdir: Path) -> Path:
    """bwa mem all lanes of a sample into a sorted, indexed BAM."""
    rows = [line.split("\t") for line in (data / "samples.tsv").read_text().splitlines()[1:]]
    for mate, col in (("R1", 1), ("R2", 2)):
        with open(workdir / f"{sample}_{mate}.fq.gz", "wb") as out:
            for row in rows:
                if row[0] == sample:
                    out.write((data / row[col]).read_bytes())  # gzip members concatenate
    bam = workdir / f"{sample}.bam"
    subprocess.run(f"bwa mem -v 1 -t 2 {data}/ref/genome.fa {workdir}/{sample}_R1.fq.gz "
                   f"{workdir}/{sample}_R2.fq.gz | samtools sort -o {bam} -",
                   shell=True, check=True, capture_output=True)
    pysam.index(str(bam))
    return bam


def allele_fraction(bam: pysam.AlignmentFile, record) -> float:
    """Observed ALT fraction of an SNV (MAPQ >= 20, BQ >= 13)."""
    bases = []
    for column in bam.pileup(record.chrom, record.pos - 1, record.pos, truncate=True,
                             min_base_quality=13, min_mapping_quality=20, stepper="all"):
        bases = [b.upper() for b in column.get_query_sequences() if b]
    assert len(bases) >= 10, (record.chrom, record.pos)
    return sum(b == record.alts[0] for b in bases) / len(bases)


@pytest.fixture(scope="module")
def bams(data, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("bam")
    return {s: pysam.AlignmentFile(str(align(data, s, workdir))) for s in ("tumor", "normal")}


def mean_af(bam, records) -> float:
    return float(np.mean([allele_fraction(bam, r) for r in records]))


def test_reads_carry_the_truth(data, bams):
    somatic = [v for v in pysam.VariantFile(str(data / "truth" / "somatic.vcf.gz"))
               if v.info["VT"] == "SNV"]
    clonal = [v for v in somatic if v.info.get("CLONAL")]
    subclonal = [v for v in somatic if not v.info.get("CLONAL")]
    artifacts = list(pysam.VariantFile(str(data / "truth" / "artifacts.vcf.gz")))
    assert mean_af(bams["tumor"], clonal) == pytest.approx(0.40, abs=0.1)
    assert mean_af(bams["tumor"], subclonal) == pytest.approx(0.12, abs=0.06)
    assert mean_af(bams["normal"], clonal + subclonal) < 0.01
    assert mean_af(bams["tumor"], artifacts) == pytest.approx(0.25, abs=0.07)
    assert mean_af(bams["normal"], artifacts) < 0.04


def test_germline_genotypes_match_reads(data, bams):
    germline = [v for v in pysam.VariantFile(str(data / "truth" / "germline.vcf.gz"))
                if v.info["VT"] == "SNV"]
    het = [v for v in germline if sum(v.samples["patient"]["GT"]) == 1]
    hom_ref = [v for v in germline if sum(v.samples["patient"]["GT"]) == 0]
    assert len(het) > 20 and len(hom_ref) > 5
    assert mean_af(bams["normal"], het) == pytest.approx(0.5, abs=0.08)
    assert mean_af(bams["normal"], hom_ref) < 0.02


# --------------------------------------------------------------------------- unit: left-alignment

def load_generator():
    """Import .test/make_testdata.py as a module (it is a script, not a package)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("make_testdata", GENERATOR)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_left_alignment_agrees_with_bcftools(tmp_path):
    """Random indels in a repeat-rich sequence: left-aligned exactly as `bcftools norm` does,
    and the variant still spells the intended haplotype."""
    gen = load_generator()
    rng = np.random.default_rng(3)
    units = ["A", "CA", "TTG", "GATC", "C", "AGG"]
    seq = "".join(units[i] * int(rng.integers(1, 8)) for i in rng.integers(0, 6, size=400))
    (tmp_path / "r.fa").write_text(f">c\n{seq}\n")
    subprocess.run(["samtools", "faidx", str(tmp_path / "r.fa")], check=True)
    variants, moved = [], 0
    for pos0 in sorted(rng.choice(np.arange(20, len(seq) - 40), size=60, replace=False)):
        pos0, length = int(pos0), int(rng.integers(1, 6))
        if rng.random() < 0.5:
            var, span = gen.deletion_variant("c", seq, pos0, length)
            intended = seq[:pos0] + seq[pos0 + length:]
        else:
            inserted = "".join(rng.choice(list("ACGT"), size=length))
            var, span = gen.insertion_variant("c", seq, pos0, inserted)
            intended = seq[:pos0] + inserted + seq[pos0:]
        assert gen.apply_variants({"c": seq}, [var])["c"] == intended
        assert span[0] == var.pos - 1 and span[1] >= var.pos
        moved += var.pos != pos0
        variants.append(var)
    assert moved > 5  # the repeats really exercised the shifting
    rows = [f"c\t{v.pos}\t.\t{v.ref}\t{v.alt}\t.\tPASS\t." for v in sorted(
        set(variants), key=lambda v: v.pos)]
    vcf = tmp_path / "in.vcf"
    vcf.write_text("##fileformat=VCFv4.2\n##contig=<ID=c,length=%d>\n" % len(seq)
                   + "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n" + "\n".join(rows) + "\n")
    out = subprocess.run(["bcftools", "norm", "-f", str(tmp_path / "r.fa"), "-c", "e", str(vcf)],
                         capture_output=True, text=True, check=True)
    total, _split, realigned, _skipped = out.stderr.strip().splitlines()[-1].split()[-1].split("/")
    assert int(total) == len(rows) and int(realigned) == 0


def test_wgsim_simulator(tmp_path):
    """--simulator wgsim builds the same layout; counts in meta.json match the FASTQs."""
    outdir = tmp_path / "wgsim"
    generate(outdir, "--seed", str(SEED), "--simulator", "wgsim")
    meta = json.loads((outdir / "truth" / "meta.json").read_text())
    assert meta["simulator"] == "wgsim"
    for sample, lanes in meta["read_pairs_per_lane"].items():
        for lane, count in lanes.items():
            names1, seqs1 = read_fastq(outdir / "fastq" / f"{sample}_{lane}_R1.fastq.gz")
            names2, _ = read_fastq(outdir / "fastq" / f"{sample}_{lane}_R2.fastq.gz")
            assert names1 == names2 and len(names1) == count
    # coverage as configured: pairs * 2 * read length / genome length
    genome = meta["genome_length"]
    for sample, cov in meta["coverage"].items():
        unique = meta["read_pairs"][sample] - meta["duplicate_pairs"][sample]
        assert unique * 2 * meta["read_length"] / genome == pytest.approx(cov, rel=0.02)


def planted_svs(data: Path) -> list[dict]:
    lines = (data / "truth" / "somatic_sv.tsv").read_text().splitlines()
    return [dict(zip(lines[0].split("\t"), line.split("\t"))) for line in lines[1:]]


def test_sv_truth_lies_away_from_the_small_variants(data, meta):
    svs = planted_svs(data)
    assert Counter(sv["type"] for sv in svs) == {"deletion": 4, "tandem_duplication": 4, "inversion": 4,
                                                 "translocation": 1}
    assert meta["counts"]["somatic_sv"] == dict(Counter(sv["type"] for sv in svs))
    assert {sv["vaf"] for sv in svs} == {"0.4"}
    small = [(v.chrom, v.pos) for name in ("somatic", "artifacts")
             for v in pysam.VariantFile(str(data / "truth" / f"{name}.vcf.gz"))]
    for sv in svs:
        if sv["type"] == "translocation":
            assert sv["chrom_1"] != sv["chrom_2"]
            spans = [(sv["chrom_1"], int(sv["pos_1"]), int(sv["pos_1"])), (sv["chrom_2"], int(sv["pos_2"]), int(sv["pos_2"]))]
        else:
            assert sv["chrom_1"] == sv["chrom_2"] and 1000 <= int(sv["length"]) <= 3000
            spans = [(sv["chrom_1"], int(sv["pos_1"]), int(sv["pos_2"]))]
        # No somatic or artifact site inside an SV or within a fragment of its breakpoints.
        assert not [site for site in small for chrom, lo, hi in spans if site[0] == chrom and lo - 500 <= site[1] <= hi + 500]


def test_reads_carry_the_svs(data, bams):
    """Deletions lower the tumor's depth by the clonal VAF (0.4), tandem duplications raise it; the
    normal's depth stays; each SV's junction has soft-clipped tumor reads at its breakpoint."""
    def depth(bam, chrom, start, end):
        return bam.count(chrom, start, end, read_callback="all") / (end - start)

    for sv in planted_svs(data):
        chrom, lo, hi = sv["chrom_1"], int(sv["pos_1"]), int(sv["pos_2"])
        if sv["type"] in ("deletion", "tandem_duplication"):
            ratios = {sample: depth(bams[sample], chrom, lo + 300, hi - 300)
                      / depth(bams[sample], chrom, max(0, lo - 1300), lo - 300) for sample in ("tumor", "normal")}
            expected = 0.6 if sv["type"] == "deletion" else 1.4
            assert ratios["tumor"] == pytest.approx(expected, abs=0.2), (sv, ratios)
            assert ratios["normal"] == pytest.approx(1.0, abs=0.2), (sv, ratios)
        clipped = [read for read in bams["tumor"].fetch(chrom, lo - 5, lo + 5)
                   if read.cigartuples and any(op == 4 and length >= 15 for op, length in read.cigartuples)]
        assert len(clipped) >= 3, sv


STOPS = {"TAA", "TAG", "TGA"}


def test_gene_table_puts_every_somatic_variant_in_a_stop_free_coding_exon(data, meta):
    """genes.gtf (the scenarios' gene annotation): one made-up one-exon coding gene around each
    somatic variant, its CDS whole codons with no stop codon on its strand, inside its exon."""
    rows = [line.split("\t") for line in (data / "genes.gtf").read_text().splitlines() if not line.startswith("#")]
    cds = [(row[0], int(row[3]), int(row[4]), row[6]) for row in rows if row[2] == "CDS"]
    exons = {row[8]: (int(row[3]), int(row[4])) for row in rows if row[2] == "exon"}
    assert len(cds) == meta["counts"]["somatic"] and len(exons) == len(cds)
    with pysam.FastaFile(str(data / "ref" / "genome.fa")) as fasta:
        for contig, start, end, strand in cds:
            seq = fasta.fetch(contig, start - 1, end).upper()
            if strand == "-":
                seq = seq[::-1].translate(str.maketrans("ACGT", "TGCA"))
            assert len(seq) % 3 == 0 and not {seq[i:i + 3] for i in range(0, len(seq), 3)} & STOPS
    for row in rows:
        if row[2] == "CDS":
            low, high = exons[row[8]]
            assert low < int(row[3]) <= int(row[4]) < high
    somatic = [(record.chrom, record.pos) for record in pysam.VariantFile(str(data / "truth" / "somatic.vcf.gz"))]
    assert all(any(c == contig and start <= pos + 1 and pos <= end for c, start, end, _ in cds) for contig, pos in somatic)
