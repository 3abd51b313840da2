"""Post-analysis merges (genomon_smk.steps.post_analysis) and the paplot inputs
(genomon_smk.steps.paplot_report), on small tables written here."""

import configparser
import io

import pytest

from genomon_smk.steps import paplot_report, post_analysis
from genomon_smk.steps.post_analysis import merge_tables, merged_name


def write(path, *lines):
    path.write_text("".join(line + "\n" for line in lines))
    return str(path)


def table(path):
    """(meta lines, header, rows as dicts) of a merged table."""
    lines = path.read_text().splitlines()
    meta = [line for line in lines if line.startswith("#")]
    body = [line.split("\t") for line in lines if not line.startswith("#")]
    return meta, body[0], [dict(zip(body[0], row, strict=True)) for row in body[1:]]


def test_genomon_names_put_filt_before_the_case():
    assert merged_name("mutation", True, "pair_controlpanel") == "merge_mutation_filt_pair_controlpanel.txt"
    assert merged_name("sv", False, None) == "merge_sv.txt"
    assert merged_name("sv", True, None) == "merge_sv_filt.txt"
    assert [post_analysis.case_of(n, p) for n, p in ((1, 1), (1, 0), (0, 1), (0, 0))] == [
        "pair_controlpanel", "pair", "unpair_controlpanel", "unpair"]


def test_union_of_columns_id_first_na_for_missing_and_unknown_columns_carried(tmp_path):
    pair = write(tmp_path / "t1.txt", "# Version: fisher-1 mutil-2", "# Analysis Date: 2026-01-02 10:20:30",
                 "Chr\tStart\tRef\tdepth_normal\tscore(hotspot)", "chr1\t10\tA\t30\t5.2", "chr2\t20\tC\t40\t")
    single = write(tmp_path / "t2.txt", "# Version: fisher-1 mutil-3", "# Analysis Date: 2026-01-02 10:20:31",
                   "", "Chr\tStart\tRef\tdepth", "chr3\t30\tG\t12")
    out = tmp_path / "merged.txt"
    assert merge_tables([("t1", pair), ("t2", single)], str(out)) == 3
    meta, header, rows = table(out)
    assert header == ["id", "Chr", "Start", "Ref", "depth_normal", "score(hotspot)", "depth"]
    assert rows[1] == {"id": "t1", "Chr": "chr2", "Start": "20", "Ref": "C", "depth_normal": "40",
                       "score(hotspot)": "", "depth": "NA"}  # an empty last field stays empty
    assert rows[2]["depth_normal"] == rows[2]["score(hotspot)"] == "NA" and rows[2]["depth"] == "12"
    # Meta: keys sorted, a value cut at its second colon, files named where not all share it.
    assert meta == ["#AnalysisDate:2026-01-02 10", "#Version:fisher-1 mutil-2:t1", "#Version:fisher-1 mutil-3:t2"]


def test_a_missing_file_is_dropped_with_its_id(tmp_path, capsys):
    second = write(tmp_path / "b.txt", "Chr\tStart", "chr1\t5")
    out = tmp_path / "merged.txt"
    assert merge_tables([("a", str(tmp_path / "a.txt")), ("b", second)], str(out)) == 1
    _, _, rows = table(out)
    assert [row["id"] for row in rows] == ["b"]
    assert "a.txt does not exist: sample a left out" in capsys.readouterr().err


def test_merge_func_from_annovar_columns(tmp_path):
    annotated = write(tmp_path / "t.txt", "Chr\tFunc.refGene\tGene.refGene\tExonicFunc.refGene\tAlt",
                      "chr1\texonic\tTP53\tnonsynonymous SNV\tT", "chr1\tsplicing\tKRAS\t\tA")
    out = tmp_path / "merged.txt"
    merge_tables([("t", annotated)], str(out), merge_func=True)
    _, header, rows = table(out)
    assert header == ["id", "Chr", "Func.refGene", "Gene.refGene", "ExonicFunc.refGene", "Merge_Func", "Alt"]
    assert [row["Merge_Func"] for row in rows] == ["nonsynonymous SNV", "splicing"]
    # Without ANNOVAR's columns there is no Merge_Func.
    merge_tables([("t", write(tmp_path / "u.txt", "Chr\tAlt", "chr1\tT"))], str(out), merge_func=True)
    assert table(out)[1] == ["id", "Chr", "Alt"]


def test_merge_mode_writes_all_then_each_case_in_genomon_order(tmp_path):
    samples = []
    for name, case in (("t4", "unpair"), ("t1", "pair_controlpanel"), ("t2", "pair_controlpanel")):
        result = write(tmp_path / f"{name}.txt", "Chr\tStart", f"chr1\t{name[1]}", f"chr2\t{name[1]}")
        filtered = write(tmp_path / f"{name}.filt.txt", "Chr\tStart", f"chr1\t{name[1]}")
        samples.append((name, case, result, filtered))
    out = tmp_path / "out"
    out.mkdir()
    written = post_analysis.merge_mode("sv", samples, str(out))
    assert written == {"merge_sv.txt": 6, "merge_sv_pair_controlpanel.txt": 4, "merge_sv_unpair.txt": 2,
                       "merge_sv_filt.txt": 3, "merge_sv_filt_pair_controlpanel.txt": 2, "merge_sv_filt_unpair.txt": 1}
    # `all`: case 1's tumors first (sheet order), case 4's last.
    assert [row["id"] for row in table(out / "merge_sv_filt.txt")[2]] == ["t1", "t2", "t4"]


def test_qc_row_from_coverage_and_samtools_stats(tmp_path):
    coverage = write(tmp_path / "c.tsv", "sample\tmean_depth\tfraction_ge_10x", "s\t30.5\t0.9")
    stats = write(tmp_path / "s.txt", "# comment", "SN\traw total sequences:\t100\t# excluding",
                  "SN\treads mapped:\t90", "SN\treads duplicated:\t5\t# dup", "SN\tinsert size average:\t299.4",
                  "SN\tinsert size standard deviation:\t29.5",
                  "SN\taverage first fragment length:\t100", "SN\taverage last fragment length:\t99")
    out = tmp_path / "merge_qc.txt"
    assert post_analysis.write_qc([("s", coverage, stats)], str(out)) == 1
    _, header, rows = table(out)
    assert header[:3] == ["id", "mean_depth", "fraction_ge_10x"]
    assert rows == [{"id": "s", "mean_depth": "30.5", "fraction_ge_10x": "0.9", "total_reads": "100",
                     "mapped_reads": "90", "duplicate_reads": "5", "mean_insert_size": "299.4",
                     "insert_size_sd": "29.5", "read_length_r1": "100", "read_length_r2": "99"}]


def test_main_refuses_an_unknown_case(tmp_path, capsys):
    assert post_analysis.main(["merge", "--mode", "sv", "--out-dir", str(tmp_path),
                               "--sample", "t", "paired", "a", "b"]) == 1
    assert "unknown case paired" in capsys.readouterr().err


# --- paplot inputs


@pytest.mark.parametrize("ref, alt, expected", [("A", "T", "SNV"), ("-", "AT", "insertion"), ("AT", "-", "deletion"),
                                                ("AT", "GC", "MNV")])
def test_variant_class(ref, alt, expected):
    assert paplot_report.variant_class(ref, alt) == expected


def test_chromosomes_genomon_draws_else_every_contig():
    contigs = [("chr2", 5), ("chrM", 1), ("chr1", 9), ("chrX", 3), ("chrUn_x", 2)]
    assert paplot_report.chosen_contigs(contigs) == [("chr1", 9), ("chr2", 5), ("chrX", 3)]
    assert paplot_report.chosen_contigs([("ctgA", 5)]) == [("ctgA", 5)]


def test_config_maps_this_projects_columns_into_genomons_template():
    config = paplot_report.paplot_config(open(paplot_report.template_path()), "/g.csv", ["chr1", "chr2"], False)
    text = io.StringIO()
    config.write(text)
    parsed = configparser.RawConfigParser()
    parsed.read_string(text.getvalue())
    assert parsed.get("genome", "path") == "/g.csv" and parsed.get("ca", "use_chrs") == "chr1,chr2"
    assert parsed.get("result_format_qc", "col_opt_average_depth") == "mean_depth"
    assert not parsed.has_option("result_format_qc", "col_opt_ratio_2x")
    assert "ratio_2x" not in " ".join(value for _, value in parsed.items("qc_chart_1"))
    assert parsed.get("result_format_mutation", "col_group") == "variant_class"
    # Genomon's own columns are kept when the tables have them (ANNOVAR's).
    annotated = paplot_report.paplot_config(open(paplot_report.template_path()), "/g.csv", ["1"], True)
    assert annotated.get("result_format_mutation", "col_group") == "Merge_Func"
    assert annotated.get("result_format_mutation", "col_gene") == "Gene.refGene"
    # The SV columns are Genomon's, which this project's SV results keep.
    assert annotated.get("result_format_ca", "col_chr1") == "Chr_1"


def test_mutation_table_gets_a_class_column(tmp_path):
    merged = write(tmp_path / "merge_mutation_filt_pair.txt", "#Version:x", "id\tChr\tStart\tRef\tAlt",
                   "t1\tchr1\t5\tA\tG", "t1\tchr1\t9\t-\tCC")
    out = tmp_path / "mutation.txt"
    assert paplot_report.write_mutation_table([merged], str(out)) is False
    _, header, rows = table(out)
    assert header[-1] == "variant_class" and [row["variant_class"] for row in rows] == ["SNV", "insertion"]
    assert [row["id"] for row in rows] == ["t1", "t1"]


def test_mutation_positions_for_pmsignature_as_genomon_cuts_them(tmp_path):
    """id, chrN, Start, Ref, Alt of every row on 1-22, X or Y (one `chr` prefix, however the
    table names it), the tables appended in order; an empty file when nothing is left."""
    first, second, empty = tmp_path / "a.txt", tmp_path / "b.txt", tmp_path / "c.txt"
    first.write_text("#meta: x\nid\tChr\tStart\tEnd\tRef\tAlt\tmisRate_tumor\n"
                     "t1\t1\t100\t100\tC\tA\t0.3\nt1\tMT\t5\t5\tA\tG\t0.1\nt1\tchrX\t7\t7\t-\tT\t0.2\n")
    second.write_text("id\tChr\tStart\tEnd\tRef\tAlt\n"
                      "t2\tchr2\t9\t9\tG\tT\nt2\tGL000192.1\t3\t3\tA\tC\nt2\tChr3\t11\t12\tAC\t-\n"
                      # unplaced, random and alt contigs whose names start like a chromosome's
                      "t2\tchr1_gl000191_random\t4\t4\tA\tC\nt2\tchr6_GL000250v2_alt\t5\t5\tA\tC\n"
                      "t2\t1_decoy\t6\t6\tA\tC\n")
    empty.write_text("")
    out = tmp_path / "mutation.cut.txt"
    assert post_analysis.mutation_positions([str(first), str(empty), str(second)], str(out)) == 4
    assert out.read_text() == ("t1\tchr1\t100\tC\tA\nt1\tchrX\t7\t-\tT\n"
                               "t2\tchr2\t9\tG\tT\nt2\tchr3\t11\tAC\t-\n")
    assert post_analysis.main(["cut", "--out", str(out), str(empty)]) == 0 and out.read_text() == ""
    first.write_text("id\tChr\tStart\n")
    assert post_analysis.main(["cut", "--out", str(out), str(first)]) != 0
