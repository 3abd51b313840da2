"""The post-analysis tables and the paplot report of a run: every merged table recounted from the
per-sample files it merges, and paplot's pages opened in headless Chromium (no console message,
every sample drawn). `check_post_analysis` is also called by the scenario tests."""

import json
import re
import shutil
import subprocess

import pytest

pytestmark = pytest.mark.workflow

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CASES = ("pair_controlpanel", "pair", "unpair_controlpanel", "unpair")
MODES = {
    "mutation": lambda results, tumor, suffix: results / f"mutation/{tumor}/{tumor}.genomon_mutation.result{suffix}",
    "sv": lambda results, tumor, suffix: results / f"sv/{tumor}/{tumor}.genomonSV.result{suffix}",
}


def read_table(path):
    """(meta lines, header, rows as lists) of a tab-separated table with `#` meta lines."""
    lines = [line for line in path.read_text().split("\n") if line.strip()]
    meta = [line for line in lines if line.startswith("#")]
    body = [line.split("\t") for line in lines if not line.startswith("#")]
    return meta, body[0], body[1:]


def expected_merge(results, mode, tumors, suffix):
    """What a merged table must hold, recounted from the tumors' own files: the header (id, then
    the union of theirs; for annotated mutations Genomon's Merge_Func right after
    ExonicFunc.refGene) and each file's rows in order under it, NA where a file lacks a column."""
    files = [(tumor, read_table(MODES[mode](results, tumor, suffix))) for tumor in tumors]
    header = ["id"] + list(dict.fromkeys(column for _, (_, own, _) in files for column in own))
    if mode == "mutation" and "ExonicFunc.refGene" in header:
        header.insert(header.index("ExonicFunc.refGene") + 1, "Merge_Func")

    def cell(tumor, values, column):
        if column == "id":
            return tumor
        if column == "Merge_Func":
            return "splicing" if "splicing" in values["Func.refGene"] else values["ExonicFunc.refGene"]
        return values.get(column, "NA")

    rows = [
        [cell(tumor, dict(zip(own, row)), column) for column in header]
        for tumor, (_, own, own_rows) in files
        for row in own_rows
    ]
    return header, rows


def check_post_analysis(results, cohort, cases, qc_samples):
    """The cohort's tables: for each mode the tumors of each case ({mode: {tumor: case}}, in
    sample-sheet order) recounted into merge_{mode}[_filt][_{case}].txt (no file for a case
    without tumors), and merge_qc.txt recounted from each QC sample's coverage table and
    samtools stats."""
    directory = results / "post_analysis" / cohort
    for mode, tumors in cases.items():
        for filtered, suffix in ((False, ".txt"), (True, ".filt.txt")):
            infix = "_filt" if filtered else ""
            by_case = {case: [t for t, c in tumors.items() if c == case] for case in CASES}
            in_order = [tumor for case in CASES for tumor in by_case[case]]
            for case, chosen in [(None, in_order), *by_case.items()]:
                path = directory / f"merge_{mode}{infix}{'_' + case if case else ''}.txt"
                if not chosen:
                    assert not path.exists(), path
                    continue
                _, header, rows = read_table(path)
                assert (header, rows) == expected_merge(results, mode, chosen, suffix), path
                assert all(row[0] in chosen for row in rows)
    _, header, rows = read_table(directory / "merge_qc.txt")
    assert [row[0] for row in rows] == list(qc_samples)
    for sample, row in zip(qc_samples, rows):
        values = dict(zip(header, row))
        _, coverage_header, coverage_rows = read_table(results / f"qc/{sample}/{sample}.coverage.tsv")
        for column, value in zip(coverage_header[1:], coverage_rows[0][1:]):
            assert values[column] == value, (sample, column)
        stats = {}
        for line in (results / f"qc/{sample}/{sample}.samtools_stats.txt").read_text().splitlines():
            if line.startswith("SN\t"):
                name, value = line.split("\t")[1:3]
                stats[name.rstrip(":")] = value
        assert values["total_reads"] == stats["raw total sequences"]
        assert values["mapped_reads"] == stats["reads mapped"]
        assert values["duplicate_reads"] == stats["reads duplicated"]
        assert values["mean_insert_size"] == stats["insert size average"]
        assert values["read_length_r1"] == stats["average first fragment length"]


# After the page's own scripts: what it drew, on <body data-probe>, and every script error.
PROBE = """
<script>
window.__errors = [];
window.addEventListener("error", (e) => window.__errors.push(String(e.message)));
window.addEventListener("load", function () {
  setTimeout(function () {
    const data = window.qc_data || window.ca_data || window.mut_data || window.msig_data || window.sig_data || {};
    const ids = data.Ids || data.index_ID || [];
    const thumbs = [...document.querySelectorAll("li.thumb strong")].map((s) => s.textContent.trim());
    document.body.setAttribute("data-probe", JSON.stringify({
      ids: ids, genes: data.genes || [], thumbs: thumbs, rects: document.querySelectorAll("svg rect").length,
      paths: document.querySelectorAll("svg path").length, errors: window.__errors}));
  }, 3000);
});
</script>
"""


def open_page(page, tmp_path):
    """(probe, console lines) of a page of the report opened in headless Chromium, from a copy
    beside it (its scripts load from there)."""
    probe_page = page.with_name(f"probe_{page.name}")
    text = page.read_text()
    head, end, tail = text.rpartition("</body>")
    probe_page.write_text(head + PROBE + end + tail if end else text + PROBE)
    try:
        result = subprocess.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
             f"--user-data-dir={tmp_path / 'chromium-profile'}", "--enable-logging=stderr", "--v=0",
             "--virtual-time-budget=15000", "--dump-dom", probe_page.as_uri()],
            capture_output=True, text=True, timeout=120,
        )
    finally:
        probe_page.unlink()
    console = [line for line in result.stderr.splitlines() if ":CONSOLE" in line]
    match = re.search(r'data-probe="([^"]*)"', result.stdout)
    probe = json.loads(match.group(1).replace("&quot;", '"').replace("&amp;", "&")) if match else None
    return probe, console


def check_paplot(results, cohort, title, qc_samples, sv_tumors, mutation_tumors, tmp_path, mutation_genes=None):
    """paplot/{cohort}: index.html links every report; each report's page renders in Chromium
    without a console message and draws every sample it should (and, given mutation_genes, the
    mutation matrix those genes)."""
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    directory = results / "paplot" / cohort
    index = (directory / "index.html").read_text()
    assert open_page(directory / "index.html", tmp_path)[1] == []
    expected = {"qc": qc_samples, "sv": sv_tumors, "mutation": mutation_tumors}
    for kind, samples in expected.items():
        page = directory / title / f"graph_{kind}.html"
        assert f"{title}/graph_{kind}.html" in index, kind
        probe, console = open_page(page, tmp_path)
        assert console == [], (kind, console)
        assert probe is not None and probe["errors"] == [], (kind, probe)
        assert sorted(probe["ids"]) == sorted(samples), kind
        if kind == "sv":  # one circle per tumor, titled with its name
            assert sorted(probe["thumbs"]) == sorted(samples)
        if kind == "mutation" and mutation_genes is not None:
            assert sorted(probe["genes"]) == sorted(mutation_genes), probe["genes"]
        assert probe["rects"] + probe["paths"] > len(samples), (kind, probe)


def with_rows(results, tumors):
    """The tumors whose filtered mutation result has a call (the matrix draws only those)."""
    return [t for t in tumors if read_table(MODES["mutation"](results, t, ".filt.txt"))[2]]


def test_default_run_tables_recounted(pipeline_run):
    """The default scenario (cohort: its samples table's name): one tumor with a normal and a panel."""
    check_post_analysis(pipeline_run, "samples", {"mutation": {"tumor": "pair_controlpanel"},
                                                 "sv": {"tumor": "pair_controlpanel"}},
                        ["tumor", "normal", "pon1", "pon2", "pon3"])


def test_default_run_paplot_in_chromium(pipeline_run, tmp_path):
    check_paplot(pipeline_run, "samples", "Genomon", ["tumor", "normal", "pon1", "pon2", "pon3"], ["tumor"],
                 with_rows(pipeline_run, ["tumor"]), tmp_path)
    assert with_rows(pipeline_run, ["tumor"]) == ["tumor"]


def test_the_probe_sees_a_broken_page(pipeline_run, tmp_path):
    """The check can fail: a page whose data script is missing logs an error."""
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    page = pipeline_run / "paplot" / "samples" / "Genomon" / "graph_qc.html"
    broken = page.with_name("broken_qc.html")
    broken.write_text(page.read_text().replace("data_qc.js", "missing_qc.js"))
    try:
        probe, console = open_page(broken, tmp_path)
    finally:
        broken.unlink()
    assert console or (probe and probe["errors"])


def test_the_cohort_key_names_the_directories_and_a_genomon_sheet_refuses_it(tmp_path, testdata):
    from conftest import run_snakemake, write_config
    from test_sv import SHEET

    config = write_config(tmp_path / "named", testdata, cohort="lung_2026")
    run = run_snakemake(config, "-n")
    output = run.stdout + run.stderr
    assert "  tables:   post_analysis/lung_2026" in output and "  paplot:   paplot/lung_2026/index.html" in output
    assert "post_analysis/samples/" not in output
    sheet = tmp_path / "sheet.csv"
    sheet.write_text(SHEET.format(d=testdata))
    config = write_config(tmp_path / "sheet", testdata, samples=None, pairs=None, control_panels=None,
                          genomon_sample_sheet=str(sheet), cohort="lung_2026")
    refused = run_snakemake(config, "-n", check=False)
    output = refused.stdout + refused.stderr
    assert refused.returncode != 0 and "key 'cohort': with genomon_sample_sheet" in output, output[-3000:]


def test_a_cohort_name_that_is_no_directory_name_is_refused(tmp_path, testdata):
    import yaml

    from conftest import REPO, write_config
    from genomon_smk.plan.config_check import config_problems
    from genomon_smk.plan.samplesheet import load_schema

    path = write_config(tmp_path, testdata, cohort="../elsewhere")
    problems = config_problems(yaml.safe_load(path.read_text()), load_schema(str(REPO / "workflow" / "schemas"), "config"),
                               [str(path)])
    assert len(problems) == 1 and "key 'cohort'" in problems[0], problems
