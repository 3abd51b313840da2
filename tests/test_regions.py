"""Regions: derivation from the .fai, region files checked for coverage, read lookup."""

import pytest

from genomon_smk.plan.regions import (
    UNMAPPED,
    Interval,
    RegionLookup,
    derive_regions,
    mutation_regions,
    read_regions,
    check_coverage,
    regions_from_file,
    write_regions,
)

CONTIGS = [("chr1", 100_000), ("chr2", 30_000), ("chrM", 500), ("gl1", 800), ("gl2", 900)]


def covered(regions):
    return sorted((i.contig, i.start, i.end) for r in regions for i in r.intervals)


def merged(spans):
    """Sorted (contig, start, end) spans with adjacent ones joined; fails on an overlap."""
    joined = []
    for contig, start, end in spans:
        if joined and joined[-1][0] == contig and joined[-1][2] >= start:
            assert joined[-1][2] == start, f"overlap at {contig}:{start}"
            joined[-1] = (contig, joined[-1][1], end)
        else:
            joined.append((contig, start, end))
    return joined


def test_derived_regions_cover_every_base_once_and_end_with_unmapped():
    regions = derive_regions(CONTIGS, max_length=40_000, pack_bp=1000)
    assert regions[-1].name == UNMAPPED and regions[-1].is_unmapped
    per_contig = {}
    for contig, start, end in covered(regions):
        per_contig.setdefault(contig, []).append((start, end))
    for contig, length in CONTIGS:
        spans = per_contig[contig]
        assert spans[0][0] == 0 and spans[-1][1] == length
        assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
    # chr1 is cut into 3 equal pieces no longer than max_length; chr2 stays whole
    chr1 = [r for r in regions if r.intervals and r.intervals[0].contig == "chr1"]
    assert [i.end - i.start for r in chr1 for i in r.intervals] == [33_333, 33_334, 33_333]
    # small contigs are packed until a region holds pack_bp bases: chrM + gl1, then gl2
    packed = [[i.contig for i in r.intervals] for r in regions if len(r.intervals) > 1]
    assert packed == [["chrM", "gl1"]]
    assert [r.name for r in regions[:-1]] == [f"r{i:04d}" for i in range(1, len(regions))]


def test_mutation_regions_cut_a_small_genome_into_equal_pieces_in_order():
    regions = derive_regions(CONTIGS, max_length=200_000, pack_bp=50_000)
    # chr1 alone; chr2, chrM, gl1, gl2 packed into one region (32,200 bp): two regions
    assert len(regions) == 3
    pieces = mutation_regions(regions, min_regions=8)
    assert UNMAPPED not in [p.name for p in pieces]
    assert merged(covered(pieces)) == merged(covered(regions))  # every base once, nothing added
    assert [i for p in pieces for i in p.intervals] == sorted(
        (i for p in pieces for i in p.intervals),
        key=lambda i: ([c for c, _ in CONTIGS].index(i.contig), i.start),
    )
    sizes = [sum(i.end - i.start for i in p.intervals) for p in pieces]
    assert len(pieces) >= 8 and max(sizes) <= -(-132_200 // 8)
    assert [p.name for p in pieces][:2] == ["r0001-1", "r0001-2"]
    # the packed region's pieces cross contig boundaries without splitting a base twice
    assert any(len(p.intervals) > 1 for p in pieces if p.name.startswith("r0002"))


def test_mutation_regions_keep_a_genome_that_has_enough_regions():
    regions = derive_regions(CONTIGS, max_length=10_000, pack_bp=1000)
    assert mutation_regions(regions, min_regions=8) == [r for r in regions if not r.is_unmapped]


def test_auto_mutation_pieces_follow_the_genome_not_the_cores():
    from genomon_smk.plan.regions import AUTO_PIECE_BP, min_mutation_regions

    # The bench's 5 Mb genome in two pieces, a larger one in four, a tiny one left whole.
    assert [min_mutation_regions("auto", bp) for bp in (180_000, 5_000_000, 7_999_999, 8_000_000, 3_000_000_000)] \
        == [1, 2, 3, 4, 4]
    assert min_mutation_regions(6, 180_000) == 6 and min_mutation_regions(1, 10**9) == 1
    regions = derive_regions(CONTIGS, max_length=200_000, pack_bp=50_000)
    assert len(mutation_regions(regions, min_mutation_regions("auto", 2 * AUTO_PIECE_BP))) == 2


def test_region_table_round_trip(tmp_path):
    regions = derive_regions(CONTIGS, 40_000, 1000)
    path = tmp_path / "regions.tsv"
    with open(path, "w") as out:
        write_regions(regions, out)
    assert read_regions(str(path)) == regions


def test_lookup_places_reads_by_start_and_unplaced_reads_in_unmapped():
    regions = derive_regions(CONTIGS, 40_000, 1000)
    lookup = RegionLookup(regions)

    def name(contig, pos):
        return lookup.names[lookup.index(contig, pos)]

    assert name("chr1", 0) == "r0001"
    assert name("chr1", 33_332) == "r0001"
    assert name("chr1", 33_333) == "r0002"
    assert name("chr1", 99_999) == "r0003"
    assert name("gl1", 10) == name("chrM", 0)
    assert name(None, -1) == UNMAPPED


def test_region_file_in_bed_and_interval_list_forms(tmp_path):
    contigs = [("1", 1000), ("2", 500)]
    bed = tmp_path / "regions.bed"
    bed.write_text("2\t0\t500\tb\n1\t0\t400\ta\n1\t400\t1000\ta2\n")
    regions, notes = regions_from_file(str(bed), contigs, 50_000_000, 10_000_000)
    assert [[i.samtools() for i in r.intervals] for r in regions] == [["1:1-400"], ["1:401-1000"], ["2:1-500"], []]
    assert notes == []
    genomon = tmp_path / "genomon.interval_list"
    genomon.write_text("1:1-400\n1:401-1000,2:1-500\n")
    regions, notes = regions_from_file(str(genomon), contigs, 50_000_000, 10_000_000)
    assert regions[1].intervals == (Interval("1", 400, 1000), Interval("2", 0, 500))
    assert notes == []


def test_a_genomon_interval_list_is_completed_to_cover_the_reference_once(tmp_path):
    """Genomon's GRCh37 list as it is: telomere gaps left out, adjacent lines sharing their
    boundary base, a contig starting at 0, and the decoy/unplaced contigs not listed."""
    contigs = [("1", 1000), ("2", 500), ("MT", 100), ("GL1", 30), ("hs37d5", 40)]
    genomon = tmp_path / "GRCh37.interval_list"
    genomon.write_text("1:11-600\n1:600-900\n2:5-450\nMT:0-100\n")
    regions, notes = regions_from_file(str(genomon), contigs, 50_000_000, 10_000_000)
    assert [[i.samtools() for i in r.intervals] for r in regions] == [
        ["1:1-600"],
        ["1:601-1000"],
        ["2:1-500"],
        ["MT:1-100"],
        ["GL1:1-30", "hs37d5:1-40"],
        [],
    ]
    assert "1:600 is in two intervals: kept in the first" in notes
    assert "1:1-10 is in no interval: added to 1:11-600" in notes
    assert "1:901-1000 is in no interval: added to 1:600-900" in notes
    assert "2:451-500 is in no interval: added to 2:5-450" in notes
    assert any(note == "2 contigs in no interval (e.g. GL1): a region of their own" for note in notes)
    # every base once: what markdup needs
    assert check_coverage([list(r.intervals) for r in regions[:-1]], contigs, "x") == []


def test_an_interval_list_still_refuses_what_cannot_be_meant(tmp_path):
    genomon = tmp_path / "bad.interval_list"
    genomon.write_text("1:1-600\n1:500-1000\n3:1-10\n")
    with pytest.raises(ValueError, match=r"contig '3' is not in the reference[\s\S]*1:500-1000 overlaps another region"):
        regions_from_file(str(genomon), [("1", 1000)], 50_000_000, 10_000_000)


@pytest.mark.parametrize(
    "text, message",
    [
        ("1\t0\t400\n2\t0\t500\n", r"1:401-1000 is in no region"),
        ("1\t0\t600\n1\t500\t1000\n2\t0\t500\n", r"1:501-1000 overlaps another region"),
        ("1\t0\t1000\n2\t0\t500\n3\t0\t10\n", r"contig '3' is not in the reference"),
        ("1\t0\t1001\n2\t0\t500\n", r"outside 1"),
        ("1\tx\t5\n", r"not a BED line"),
    ],
)
def test_bad_region_files_are_refused(tmp_path, text, message):
    path = tmp_path / "bad.bed"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        regions_from_file(str(path), [("1", 1000), ("2", 500)], 50_000_000, 10_000_000)


# --- where mutations are called (Genomon's interval list; GRCh37 with decoys)

GRCH37_DECOY = [(str(n), 249_250_621 if n == 1 else 1_000_000) for n in range(1, 23)] + [
    ("X", 1_000_000), ("Y", 1_000_000), ("MT", 16_569), ("GL000207.1", 4_262), ("hs37d5", 35_477_943),
    ("NC_007605", 171_823)]


def test_an_interval_lists_lines_are_the_mutation_regions_and_nothing_else(tmp_path):
    from genomon_smk.plan.regions import interval_list_regions

    listed = tmp_path / "genome.interval_list"
    # Genomon's form: 1-based, adjacent lines share their boundary base; gl1, gl2 and chrM left out.
    listed.write_text("chr1:1-50000\nchr1:50000-100000\nchr2:1-30000\n")
    regions = interval_list_regions(str(listed), CONTIGS)
    assert [(r.name, [(i.contig, i.start, i.end) for i in r.intervals]) for r in regions] == [
        ("r0001", [("chr1", 0, 50_000)]), ("r0002", [("chr1", 50_000, 100_000)]), ("r0003", [("chr2", 0, 30_000)])]
    assert mutation_regions(regions, 1) == regions  # no unmapped region, nothing completed
    bed = tmp_path / "regions.bed"
    bed.write_text("chr1\t0\t100000\n")
    assert interval_list_regions(str(bed), CONTIGS) is None  # a BED file's regions are markdup's too
    listed.write_text("chr1:1-50000\nchr1:40000-60000\nchr9:1-10\n")
    with pytest.raises(ValueError, match="overlaps another line(.|\n)*'chr9' is not in the reference"):
        interval_list_regions(str(listed), CONTIGS)


def test_grch37_with_decoys_calls_mutations_on_its_chromosomes_only_unless_all():
    from genomon_smk.plan.regions import mutation_contigs, only_contigs, primary_contigs

    kept = mutation_contigs(GRCH37_DECOY, "auto")
    assert kept == {*map(str, range(1, 23)), "X", "Y", "MT"}
    assert mutation_contigs(GRCH37_DECOY, "all") is None
    hg19 = [("chr" + name if name != "MT" else "chrM", length) for name, length in GRCH37_DECOY[:25]] + [("chrUn_gl000220", 161_802)]
    assert "chrM" in primary_contigs(hg19) and "chrUn_gl000220" not in primary_contigs(hg19)
    assert primary_contigs(GRCH37_DECOY[:25]) is None  # no decoys: nothing to leave out
    assert mutation_contigs(CONTIGS, "auto") is None  # not GRCh37: every contig
    regions = derive_regions(GRCH37_DECOY, max_length=50_000_000, pack_bp=10_000_000)
    called = mutation_regions(only_contigs(regions, kept), 1)
    assert {i.contig for r in called for i in r.intervals} == kept
    assert not any(i.contig in ("hs37d5", "GL000207.1", "NC_007605") for r in called for i in r.intervals)
