"""Genomon's pmsignature stages in the workflow (genomon_smk.plan.pmsignature,
workflow/rules/pmsignature.smk): which modes and K run, the background's build in resources/, the
refusals before any job. The stage's run on the Genomon-sheet scenario is in test_scenarios.py;
here it runs on planted signatures."""

import copy

import pytest
from snakemake.exceptions import WorkflowError

from conftest import REPO, parse_workflow, write_config
from genomon_smk.plan import pmsignature as plan
from genomon_smk.plan.setup_build import ReferencePlan
from genomon_smk.tools import pmsignature as tool

CONFIG = {
    "paplot": {"include_unpanel": True, "include_unpair": True},
    "pmsignature": {"annotation": "genes.gtf", "seed": 1, "background_positions": 1000},
    "pmsignature_ind": {"enable": True, "signum_min": 2, "signum_max": 6, "trialnum": 10, "threads": 1},
    "pmsignature_full": {"enable": False, "signum_min": 2, "signum_max": 6, "trialnum": 10, "threads": 1},
}


def planned(tmp_path, cases=("pair_controlpanel",), **changes):
    config = copy.deepcopy(CONFIG)
    for key, value in changes.items():
        section, name = key.split("__")
        config[section][name] = value
    reference = ReferencePlan(str(tmp_path / "genome.fa"), (str(tmp_path / "genome.fa"),), built=False)
    return plan.plan_pmsignature(config, list(cases), reference, str(tmp_path / "resources"),
                                 lambda path: str(tmp_path / path)), config


def test_one_job_per_k_of_each_enabled_mode_when_a_drawn_table_has_tumors(tmp_path):
    ind, _ = planned(tmp_path)
    assert ind.ks == {"ind": [2, 3, 4, 5, 6]} and ind.jobs("full") == 0
    assert ind.annotation == str(tmp_path / "genes.gtf")
    both, _ = planned(tmp_path, pmsignature_full__enable=True, pmsignature_full__signum_max=3)
    assert both.ks == {"ind": [2, 3, 4, 5, 6], "full": [2, 3]}
    # Genomon's condition: some tumor's filtered table is one paplot draws.
    assert planned(tmp_path, cases=())[0].ks == {}
    assert planned(tmp_path, cases=("unpair",), paplot__include_unpair=False)[0].ks == {}
    assert planned(tmp_path, cases=("unpair",))[0].ks == {"ind": [2, 3, 4, 5, 6]}
    assert planned(tmp_path, pmsignature_ind__enable=False)[0].background is None


def test_an_enabled_stage_that_fits_no_tumor_is_warned_about():
    """Genomon skips the stage silently when paplot draws none of the cohort's cases."""
    config = copy.deepcopy(CONFIG)
    config["paplot"] = {"include_unpanel": False, "include_unpair": False}
    warning = plan.skipped_warning(config, ["pair", "unpair"])
    assert warning and "pmsignature_ind enabled, but no tumor's mutations are fitted" in warning
    assert "pair, unpair" in warning and "include_unpanel: False" in warning
    assert plan.skipped_warning(config, ["pair_controlpanel"]) is None  # drawn: it runs
    assert plan.skipped_warning(config, []) is None  # no tumor at all: nothing to say
    config["pmsignature_ind"]["enable"] = False
    assert plan.skipped_warning(config, ["pair"]) is None


def test_the_background_is_keyed_by_reference_annotation_seed_and_draw(tmp_path):
    (tmp_path / "genes.gtf").write_text("")
    first, _ = planned(tmp_path)
    assert first.background.directory.startswith(f"{tmp_path}/resources/pmsignature/genome-")
    assert [name.rsplit("/", 1)[1] for name in first.background.files] == list(plan.BACKGROUND_TABLES)
    assert planned(tmp_path)[0].background == first.background
    assert planned(tmp_path, pmsignature__seed=2)[0].background.directory != first.background.directory
    assert planned(tmp_path, pmsignature__background_positions=2000)[0].background.directory != \
        first.background.directory
    (tmp_path / "genes.gtf").write_text("changed\n")
    assert planned(tmp_path)[0].background.directory != first.background.directory


def test_the_plans_table_names_are_the_tools():
    assert {mode.table_name for mode in (tool.IND, tool.Mode("ind", 5, False), tool.FULL)} == \
        set(plan.BACKGROUND_TABLES)


def test_problems_name_the_key(tmp_path):
    gtf, config = planned(tmp_path)
    assert plan.problems(config, gtf, []) == [(("pmsignature", "annotation"), f"file not found: {tmp_path}/genes.gtf")]
    (tmp_path / "genes.gtf").write_text('1\tsrc\texon\t1\t10\t.\t+\t.\tgene_id "g";\n')
    assert plan.problems(config, gtf, [("1", 100)]) == []
    (tmp_path / "genes.gtf").write_text("")
    (key, problem), = plan.problems(config, gtf, [("1", 100)])
    assert key == ("pmsignature", "annotation") and problem.startswith(f"{tmp_path}/genes.gtf: no GTF or genePred row")
    low, config = planned(tmp_path, pmsignature_ind__signum_min=4, pmsignature_ind__signum_max=3)
    assert plan.problems(config, low, []) == [(("pmsignature_ind", "signum_max"), "3 is below signum_min (4)")]


def test_the_default_annotation_is_refused_for_another_genome(tmp_path):
    """hg19 (annot_utils' refGene, installed by bin/install) fits GRCh37 named either way."""
    hg19, config = planned(tmp_path, pmsignature__annotation="hg19")
    assert hg19.annotation.endswith("annot_utils/data/hg19/refGene.txt.gz")
    assert plan.problems(config, hg19, [("1", 249250621), ("2", 243199373)]) == []
    assert plan.problems(config, hg19, [("chr1", 249250621)]) == []
    (key, problem), = plan.problems(config, hg19, [("chr1", 248956422)])
    assert key == ("pmsignature", "annotation") and "chromosome 1 is 248,956,422 bp" in problem


def test_the_workflow_refuses_hg19_genes_for_the_test_genome(tmp_path, testdata):
    """Named for pmsignature (its default, gene_annotation's genes, leaves the stage out for the
    test genome: tests/test_annotation_stage.py)."""
    config = write_config(tmp_path, testdata, pmsignature_ind={"enable": True}, pmsignature={"annotation": "hg19"})
    with pytest.raises(WorkflowError) as refused:
        parse_workflow(config)
    assert "'pmsignature.annotation': hg19 is the refGene table" in str(refused.value), str(refused.value)
    assert "it has no chromosome 1 (or chr1)" not in str(refused.value)  # the test genome has chr1
    assert not (tmp_path / "results").exists()


# --- a run's stage (the Genomon-sheet scenario's, test_scenarios.py)

TRUNCATION = 0.001  # the JSON's probabilities are truncated to 3 decimals


def open_signature_page(page, ids, tmp_path):
    """A pmsignature or signature page of paplot's, opened in headless Chromium: no console
    message or script error, the tumors `ids` drawn."""
    from test_post_analysis_workflow import open_page

    probe, console = open_page(page, tmp_path)
    assert console == [] and probe is not None and probe["errors"] == [], (page.name, console, probe)
    assert probe["ids"] == ids and probe["rects"] + probe["paths"] > len(ids), (page.name, probe)


def check_pmsignature(results, cohort, tumors, ind_ks, full_ks, tmp_path):
    """pmsignature/{cohort}: mutation.cut.txt is the drawn filtered tables' SNV-and-indel rows cut
    as Genomon cuts them (here every case is drawn), each K's JSON has paplot's layout with every
    simplex summing to 1, and paplot links a page per K (the largest ind and smallest full K
    opened in Chromium)."""
    import json

    from genomon_smk.steps.post_analysis import CASES
    from test_post_analysis_workflow import CHROMIUM, read_table

    directory = results / "pmsignature" / cohort
    expected = []
    for case, _, _ in CASES:
        path = results / "post_analysis" / cohort / f"merge_mutation_filt_{case}.txt"
        if path.exists():
            _, header, rows = read_table(path)
            expected += ["\t".join([row[header.index("id")], "chr" + row[header.index("Chr")].removeprefix("chr"),
                                    *(row[header.index(c)] for c in ("Start", "Ref", "Alt"))]) for row in rows]
    assert (directory / "mutation.cut.txt").read_text().splitlines() == expected
    for mode, ks in (("ind", ind_ks), ("full", full_ks)):
        for k in ks:
            result = json.loads((directory / f"pmsignature.{mode}.result.{k}.json").read_text())
            assert result["id"] == tumors and len(result["mutation_count"]) == len(tumors), (mode, k)
            signatures = result["ref"] if mode == "ind" else result["signature"]
            assert len(signatures) == k - 1, (mode, k)
            simplices = ([row for s in result["ref"] for row in s[:2] + s[3:]] + result["strand"]
                         + [[p for row in s for p in row] for s in result["alt"]] if mode == "ind"
                         else [[p for row in s for p in row] for s in result["signature"]])
            memberships = [[q for i, _, q in result["mutation"] if i == n] for n in range(len(tumors))]
            for simplex in simplices + memberships:
                assert 1 - len(simplex) * TRUNCATION <= sum(simplex) <= 1, (mode, k, simplex)
            assert [len(m) for m in memberships] == [k] * len(tumors)
    index = (results / "paplot" / cohort / "index.html").read_text()
    pages = [f"graph_ind{k}.html" for k in ind_ks] + [f"graph_full{k}.html" for k in full_ks]
    assert all(f"Genomon/{page}" in index for page in pages), index
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    for page in (f"graph_ind{max(ind_ks)}.html", f"graph_full{min(full_ks)}.html"):
        open_signature_page(results / "paplot" / cohort / "Genomon" / page, tumors, tmp_path)


# --- the stage on planted signatures: mutation.cut.txt drawn from two known ind signatures and the
# background, on the test genome's made-up genes, then the stage's own rules and paplot

GENES = REPO / ".test" / "config-genomon-sheet" / "genes.gtf"
SUBSTITUTIONS = ((("C", "A"), ("C", "G"), ("C", "T"), ("T", "A"), ("T", "C"), ("T", "G")))
# Two signatures as ind features: substitution, bases at -2, -1, +1, +2 (A, C, G, T), strand (+, -).
PLANTED = (
    ([0.05, 0.05, 0.8, 0.03, 0.05, 0.02], [0.25] * 4, [0.3, 0.2, 0.2, 0.3], [0.05, 0.05, 0.85, 0.05], [0.25] * 4,
     [0.5, 0.5]),
    ([0.3, 0.05, 0.05, 0.5, 0.05, 0.05], [0.4, 0.1, 0.1, 0.4], [0.25] * 4, [0.25] * 4, [0.1, 0.4, 0.4, 0.1],
     [0.8, 0.2]),
)
# Memberships (signature 1, signature 2, background) of six tumors.
MEMBERSHIPS = ((0.8, 0.1, 0.1), (0.6, 0.3, 0.1), (0.4, 0.4, 0.2), (0.2, 0.7, 0.1), (0.1, 0.8, 0.1), (0.5, 0.2, 0.3))
PER_TUMOR = 400


def transcript_contexts(fasta, genes):
    """(normalised 5-base window, strand feature) -> [(contig, 0-based position, reverse-complemented?)]
    of every position in a transcript of `genes` (the tool's own definitions)."""
    import numpy as np

    resolve = tool.contig_resolver(fasta.references)
    transcripts = tool.read_annotation(str(genes), resolve, "transcript")
    contexts = {}
    for contig, length in zip(fasta.references, fasta.lengths):
        sequence = fasta.fetch(contig).upper()
        strands = transcripts.lookup(contig, np.arange(length))
        for pos0 in range(2, length - 2):
            window = sequence[pos0 - 2 : pos0 + 3]
            if strands[pos0] == 0 or any(base not in "ACGT" for base in window):
                continue
            normalised, _, _, flipped = tool.pyrimidine_normalise(window, window[2], window[2])
            strand = 0 if (strands[pos0] == 1) != flipped else 1
            contexts.setdefault((normalised, strand), []).append((contig, pos0, flipped))
    return contexts


def planted_positions(fasta, seed=7):
    """mutation.cut.txt rows: per tumor PER_TUMOR mutations, each of a signature drawn by the tumor's
    memberships: a planted signature's features drawn, then a transcript position of that context;
    the background's a uniformly random transcript position and alt."""
    import numpy as np

    rng = np.random.default_rng(seed)
    contexts = transcript_contexts(fasta, GENES)
    everywhere = [site for sites in contexts.values() for site in sites]
    complement = str.maketrans("ACGT", "TGCA")
    rows = []
    for number, membership in enumerate(MEMBERSHIPS, 1):
        tumor = f"tumor{number}"
        while sum(row[0] == tumor for row in rows) < PER_TUMOR:
            signature = rng.choice(3, p=membership)
            if signature == 2:
                contig, pos0, _ = everywhere[rng.integers(len(everywhere))]
                ref = fasta.fetch(contig, pos0, pos0 + 1).upper()
                alt = "ACGT".replace(ref, "")[rng.integers(3)]
            else:
                features = [rng.choice(len(p), p=p) for p in PLANTED[signature]]
                (centre, alt), flanks = SUBSTITUTIONS[features[0]], ["ACGT"[i] for i in features[1:5]]
                sites = contexts.get(("".join(flanks[:2]) + centre + "".join(flanks[2:]), features[5]))
                if not sites:
                    continue
                contig, pos0, flipped = sites[rng.integers(len(sites))]
                ref = fasta.fetch(contig, pos0, pos0 + 1).upper()
                alt = alt.translate(complement) if flipped else alt
            rows.append((tumor, contig, pos0 + 1, ref, alt))
    return rows


def fitted_features(result, index):
    """A fitted signature's ind features from paplot's JSON (substitution from `alt`, flanks from
    `ref`, strand), concatenated."""
    alt, ref = result["alt"][index], result["ref"][index]
    substitution = [alt[1][0], alt[1][2], alt[1][3], alt[3][0], alt[3][1], alt[3][2]]
    return [*substitution, *ref[0], *ref[1], *ref[3], *ref[4], *result["strand"][index]]


def cosine(a, b):
    import numpy as np

    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


@pytest.mark.workflow
def test_planted_signatures_come_back_through_the_stage_and_paplot_draws_them(pipeline_run, testdata, tmp_path):
    """The stage's rules on mutations drawn from two known signatures + the background in six
    tumors (mutation.cut.txt written where pre_pmsignature would write it; the default run's
    post-analysis tables for the rest of the report): each planted signature comes back (cosine
    similarity of its features >= 0.95) with the tumors' memberships within 0.15; the same seed
    writes the same JSON bytes again; paplot's pmsignature and signature pages render in Chromium."""
    import json
    import os
    import shutil

    import pysam

    from conftest import run_snakemake
    from test_post_analysis_workflow import CHROMIUM

    config = write_config(tmp_path / "run", testdata, resources_dir=str(tmp_path / "resources"),
                          pmsignature={"annotation": str(GENES), "background_positions": 200000},
                          pmsignature_ind={"signum_min": 3, "signum_max": 3, "trialnum": 3},
                          pmsignature_full={"enable": True, "signum_min": 3, "signum_max": 3, "trialnum": 2})
    results = tmp_path / "run" / "results"
    shutil.copytree(pipeline_run / "post_analysis", results / "post_analysis", copy_function=os.link)
    positions = results / "pmsignature" / "samples" / "mutation.cut.txt"
    positions.parent.mkdir(parents=True)
    with pysam.FastaFile(str(testdata / "ref" / "genome.fa")) as fasta:
        rows = planted_positions(fasta)
    positions.write_text("".join("\t".join(map(str, row)) + "\n" for row in rows))
    ind, full = (positions.with_name(f"pmsignature.{mode}.result.3.json") for mode in ("ind", "full"))
    index = results / "paplot" / "samples" / "index.html"
    # Last: --allowed-rules takes every word after it.
    stage = ("--allowed-rules", "pmsignature_background", "pmsignature_ind", "pmsignature_full", "paplot")
    run_snakemake(config, str(ind), str(full), str(index), *stage)
    result = json.loads(ind.read_text())
    tumors = [f"tumor{n}" for n in range(1, len(MEMBERSHIPS) + 1)]
    assert result["id"] == tumors and result["mutation_count"] == [PER_TUMOR] * len(tumors)
    planted = [[p for feature in signature for p in feature] for signature in PLANTED]
    match = [max(range(2), key=lambda s: cosine(fitted_features(result, s), truth)) for truth in planted]
    assert sorted(match) == [0, 1]
    for truth, fitted in zip(planted, match):
        assert cosine(fitted_features(result, fitted), truth) >= 0.95, (truth, fitted_features(result, fitted))
    memberships = {(i, j): q for i, j, q in result["mutation"]}
    for i, truth in enumerate(MEMBERSHIPS):
        for planted_index, fitted in enumerate(match):
            assert abs(memberships[i, fitted] - truth[planted_index]) <= 0.15, (i, memberships)
        assert abs(memberships[i, 2] - truth[2]) <= 0.15, (i, memberships)
    # The same seed: the same bytes.
    first = ind.read_bytes(), full.read_bytes()
    ind.unlink()
    full.unlink()
    run_snakemake(config, str(ind), str(full), *stage)
    assert (ind.read_bytes(), full.read_bytes()) == first
    # paplot: one pmsignature page (ind, 3 signatures with the background) and one signature page.
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    for page in ("graph_ind3.html", "graph_full3.html"):
        assert f"Genomon/{page}" in index.read_text(), page
        open_signature_page(index.with_name("Genomon") / page, tumors, tmp_path)


def test_a_k_far_above_what_pmsignature_resolves_is_warned_about_with_its_cost(tmp_path):
    """Issue 34: signum_max 50 was accepted silently (49 jobs of 4 GB / 2 h, degenerate fits)."""
    sensible, _ = planned(tmp_path, pmsignature_ind__signum_max=plan.SENSIBLE_K)
    assert plan.signum_warnings(sensible, 3) == []
    many, _ = planned(tmp_path, pmsignature_ind__signum_max=50, pmsignature_full__enable=True)
    [(key, warning)] = plan.signum_warnings(many, 3)
    assert key == ("pmsignature_ind", "signum_max")
    assert warning.startswith("50 signatures is far above what pmsignature resolves")
    assert "this cohort fits 3 tumor(s)" in warning and "49 fits (K = 2-50), each a job of 4 GB for up to 2 h" in warning
    assert "392 GB-hours" in warning and f"set signum_max to {plan.SENSIBLE_K} or less" in warning


def test_the_workflow_prints_the_k_warning_naming_the_key_s_line(tmp_path, testdata):
    genes = tmp_path / "genes.gtf"
    genes.write_text("".join(f'{contig}\tsrc\texon\t1\t100\t.\t+\t.\tgene_id "g";\n' for contig in ("chr1", "1")))
    config = write_config(tmp_path, testdata, pmsignature={"annotation": str(genes)}, resources_dir=str(tmp_path / "r"),
                          pmsignature_ind={"enable": True, "signum_max": 50})
    workflow = parse_workflow(config)
    warnings = [warning.text for warning in workflow.globals["PLAN_WARNINGS"]]
    line = next(n for n, text in enumerate(config.read_text().splitlines(), 1) if "signum_max" in text)
    assert any(f"warning: {config}:{line}: key 'pmsignature_ind.signum_max': 50 signatures" in text
               for text in warnings), warnings
