"""pmsignature (genomon_smk.tools.pmsignature): E/M steps, recovery of planted signatures,
feature encoding on a synthetic FASTA, background tables, paplot's JSON and the CLI."""

from __future__ import annotations

import itertools
import json
import logging

import numpy as np
import pysam
import pytest
import scipy.sparse as sp

from genomon_smk.tools import pmsignature as pm

COMP = str.maketrans("ACGT", "TGCA")


# ----------------------------------------------------------------------------- helpers

def simulate(rng, n_samples, per_sample, fdim, n_variable, background=True, conc=0.3):
    """Planted F, Q, background b(m) over all codes, and multinomial counts [N, all codes]."""
    F = [rng.dirichlet(np.full(d, conc), size=n_variable) for d in fdim]
    K = n_variable + (1 if background else 0)
    Q = rng.dirichlet(np.ones(K), size=n_samples)
    feats = pm.decode(np.arange(int(np.prod(fdim))), fdim)
    P = np.ones((len(feats), n_variable))
    for feature, f in enumerate(F):
        P *= f.T[feats[:, feature]]
    bg = rng.dirichlet(np.full(len(feats), 5.0)) if background else None
    if background:
        P = np.column_stack([P, bg])
    mix = Q @ P.T
    counts = np.array([rng.multinomial(per_sample, m / m.sum()) for m in mix])
    return F, Q, bg, counts


def observed_model(counts, fdim, bg, sparse=False):
    keep = np.flatnonzero(counts.sum(axis=0) > 0)
    g = counts[:, keep]
    return pm.Model(sp.csr_matrix(g) if sparse else g, pm.decode(keep, fdim), tuple(fdim),
                    None if bg is None else bg[keep])


def cosine(a, b):
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


def match(estimated, planted):
    """Best permutation of estimated signatures: (permutation, cosine per planted signature)."""
    S = planted[0].shape[0]
    best = None
    for perm in itertools.permutations(range(S)):
        cos = [cosine(np.concatenate([f[perm[s]] for f in estimated]),
                      np.concatenate([f[s] for f in planted])) for s in range(S)]
        if best is None or min(cos) > min(best[1]):
            best = (perm, cos)
    return best


def assert_simplices(params):
    for f in params.F:
        assert (f >= 0).all()
        np.testing.assert_allclose(f.sum(axis=1), 1.0, atol=1e-12)
    assert (params.Q >= 0).all()
    np.testing.assert_allclose(params.Q.sum(axis=1), 1.0, atol=1e-12)


# ----------------------------------------------------------------------------- E and M steps

@pytest.mark.parametrize("sparse, n_samples", [(False, 6), (True, 6), (False, 150)])
def test_fused_em_step_equals_explicit_e_and_m_steps(sparse, n_samples):
    rng = np.random.default_rng(3)
    fdim = (6, 4, 4, 2)
    _, _, bg, counts = simulate(rng, n_samples, 80, fdim, 2)
    model = observed_model(counts, fdim, bg, sparse)
    start = pm.random_start(rng, n_samples, 3, fdim, True)
    P = model.pattern_probabilities(start.F)
    theta = pm.responsibilities(start.Q, P)
    np.testing.assert_allclose(theta.sum(axis=2), 1.0, atol=1e-12)       # E-step simplices
    dense = model.counts.toarray() if sparse else model.counts
    explicit = pm.m_step(dense, theta, model.features, fdim, n_variable=2)
    fused, ll = model.em_step(start)
    assert_simplices(explicit)
    assert_simplices(fused)
    for a, b in zip(fused.F, explicit.F):
        np.testing.assert_allclose(a, b, rtol=1e-10)
    np.testing.assert_allclose(fused.Q, explicit.Q, rtol=1e-10)
    assert ll == pytest.approx(float((dense * np.log(start.Q @ P.T)).sum()), rel=1e-12)


def test_e_step_falls_back_to_uniform_theta():
    Q = np.array([[1.0, 0.0]])
    P = np.array([[0.0, 0.5], [0.5, 0.5]])
    theta = pm.responsibilities(Q, P)
    np.testing.assert_allclose(theta[0, 0], [0.5, 0.5])      # mixture 0 <= 1e-8: 1/K
    np.testing.assert_allclose(theta[0, 1], [1.0, 0.0])


@pytest.mark.parametrize("sparse", [False, True])
def test_fused_em_step_with_a_vanishing_mixture(sparse, monkeypatch):
    """A sample whose membership is 0 for the only signature giving its pattern: theta = 1/K."""
    monkeypatch.setattr(pm, "DENSE_BLOCK", 1)      # the vanishing cell in a block of its own
    fdim = (2, 2)
    counts = np.array([[1, 2, 0, 1], [3, 0, 1, 0]])
    model = observed_model(counts, fdim, None, sparse)
    F = [np.array([[1.0, 0.0], [0.5, 0.5]]), np.array([[0.5, 0.5], [0.5, 0.5]])]
    start = pm.Params(F, np.array([[0.5, 0.5], [1.0, 0.0]]))
    P = model.pattern_probabilities(start.F)
    theta = pm.responsibilities(start.Q, P)
    assert (start.Q @ P.T)[1, 2] == 0 and theta[1, 2].tolist() == [0.5, 0.5]
    explicit = pm.m_step(counts.astype(float), theta, model.features, fdim, n_variable=2)
    fused, ll = model.em_step(start)
    for a, b in zip(fused.F, explicit.F):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    np.testing.assert_allclose(fused.Q, explicit.Q, rtol=1e-12)
    R = start.Q @ P.T
    assert ll == pytest.approx(float((counts * np.log(np.where(R > 1e-10, R, 1))).sum()))


@pytest.mark.parametrize("sparse", [False, True])
def test_plain_em_never_decreases_the_loglik(sparse):
    rng = np.random.default_rng(11)
    fdim = pm.IND.fdim
    _, _, bg, counts = simulate(rng, 12, 150, fdim, 2)
    model = observed_model(counts, fdim, bg, sparse)
    trace = []
    result = pm.run_em(model, pm.random_start(rng, 12, 3, fdim, True), tol=1e-6, max_iter=300,
                       accelerate=False, trace=trace)
    steps = np.diff(trace)
    assert len(trace) > 20
    assert (steps >= -1e-8 * np.abs(trace[1:])).all(), steps.min()
    assert_simplices(result.params)


def test_squarem_reaches_the_plain_em_optimum_in_fewer_iterations():
    rng = np.random.default_rng(5)
    fdim = pm.IND.fdim
    _, _, bg, counts = simulate(rng, 20, 300, fdim, 2)
    model = observed_model(counts, fdim, bg)
    start = pm.random_start(np.random.default_rng(1), 20, 3, fdim, True)
    plain = pm.run_em(model, start, accelerate=False)
    fast = pm.run_em(model, start, accelerate=True)
    assert fast.converged and plain.converged
    assert fast.iterations < plain.iterations
    assert fast.loglik >= plain.loglik - 0.05
    assert_simplices(fast.params)


# ----------------------------------------------------------------------------- recovery

@pytest.mark.parametrize("n_variable, background, seed", [(2, True, 5), (3, False, 7)])
def test_planted_signatures_and_memberships_are_recovered(n_variable, background, seed):
    rng = np.random.default_rng(seed)
    fdim = pm.IND.fdim
    F, Q, bg, counts = simulate(rng, 30, 500, fdim, n_variable, background)
    model = observed_model(counts, fdim, bg)
    K = n_variable + background
    result = pm.fit(model, K, trials=3, seed=1)
    perm, cos = match(result.params.F, F)
    assert min(cos) >= 0.95, cos
    order = list(perm) + ([n_variable] if background else [])
    assert np.abs(result.params.Q[:, order] - Q).max() <= 0.1
    assert result.loglik >= model.loglik(pm.Params(F, Q))
    assert_simplices(result.params)


def test_fit_is_reproducible_with_a_seed():
    rng = np.random.default_rng(2)
    fdim = (6, 4, 4)
    _, _, bg, counts = simulate(rng, 8, 100, fdim, 2)
    model = observed_model(counts, fdim, bg)
    a, b = pm.fit(model, 3, trials=2, seed=9), pm.fit(model, 3, trials=2, seed=9, processes=2)
    assert a.trial_logliks == b.trial_logliks       # the same in forked processes
    np.testing.assert_array_equal(a.params.Q, b.params.Q)
    c = pm.fit(model, 3, trials=3, seed=9)          # a trial's start does not depend on their number
    assert c.trial_logliks[:2] == a.trial_logliks


# ----------------------------------------------------------------------------- encoding

def test_full_index_and_mixed_radix_codes():
    # numBases 3: index - 1 = 16 * sub + 4 * base(-1) + base(+1)
    assert pm.pattern_features(2, "ACG", 0, pm.FULL) == (16 * 2 + 4 * 0 + 2,)
    assert pm.pattern_features(5, "TTT", 0, pm.FULL) == (95,)
    assert pm.pattern_features(0, "GACTT", 1, pm.IND) == (0, 2, 0, 3, 3, 1)
    feats = np.array([[5, 3, 3, 3, 3, 1], [0, 0, 0, 0, 0, 0], [2, 1, 0, 3, 2, 1]])
    codes = pm.encode(feats, pm.IND.fdim)
    assert codes.tolist()[:2] == [3071, 0]
    np.testing.assert_array_equal(pm.decode(codes, pm.IND.fdim), feats)


def test_contig_resolver_maps_chr_prefixes_both_ways():
    resolve = pm.contig_resolver(["1", "X", "MT"])
    assert [resolve(c) for c in ("chr1", "1", "chrX", "chrM", "chr2")] == ["1", "1", "X", "MT", None]
    resolve = pm.contig_resolver(["chr1", "chrM"])
    assert [resolve(c) for c in ("1", "chr1", "MT")] == ["chr1", "chr1", "chrM"]


@pytest.fixture(scope="module")
def genome(tmp_path_factory):
    """A 2-contig FASTA (GRCh37-style names), a GTF and a genePred table of its genes."""
    root = tmp_path_factory.mktemp("pms")
    rng = np.random.default_rng(0)
    seqs = {"1": "".join(rng.choice(list("ACGT"), 20000)), "2": "".join(rng.choice(list("ACGT"), 12000))}
    seqs["1"] = seqs["1"][:100] + "NNNNN" + seqs["1"][105:]
    fasta = root / "ref.fa"
    fasta.write_text("".join(f">{c}\n{s}\n" for c, s in seqs.items()))
    pysam.faidx(str(fasta))
    # transcripts: 1:+ 1001-8000 (exons 1001-2000, 7001-8000), 1:- 6001-15000 (exon 6001-7500),
    # 2:- 2001-9000 (exon 2001-9000); 1:15001- is intergenic
    gtf = root / "genes.gtf"
    rows = [("1", "transcript", 1001, 8000, "+", "t1"), ("1", "exon", 1001, 2000, "+", "t1"),
            ("1", "exon", 7001, 8000, "+", "t1"), ("1", "transcript", 6001, 15000, "-", "t2"),
            ("1", "exon", 6001, 7500, "-", "t2"), ("2", "transcript", 2001, 9000, "-", "t3"),
            ("2", "exon", 2001, 9000, "-", "t3"), ("HLA-A", "transcript", 1, 100, "+", "t4")]
    gtf.write_text("".join(f'{c}\tsrc\t{k}\t{s}\t{e}\t.\t{st}\t.\tgene_id "g"; transcript_id "{t}";\n'
                           for c, k, s, e, st, t in rows))
    refgene = root / "refGene.txt"      # UCSC genePred with bin, 0-based starts, chr names
    refgene.write_text(
        "0\tNM_1\tchr1\t+\t1000\t8000\t1000\t8000\t2\t1000,7000,\t2000,8000,\t0\tA\tcmpl\tcmpl\t0,0,\n"
        "0\tNM_2\tchr1\t-\t6000\t15000\t6000\t15000\t1\t6000,\t7500,\t0\tB\tcmpl\tcmpl\t0,\n"
        "0\tNM_3\tchr2\t-\t2000\t9000\t2000\t9000\t1\t2000,\t9000,\t0\tC\tcmpl\tcmpl\t0,\n"
        "0\tNM_4\tchr6_cox_hap2\t+\t0\t100\t0\t100\t1\t0,\t100,\t0\tD\tcmpl\tcmpl\t0,\n")
    return {"root": root, "fasta": str(fasta), "gtf": str(gtf), "refgene": str(refgene), "seqs": seqs}


def base_at(genome, contig, pos):
    return genome["seqs"][contig][pos - 1]


def test_annotation_first_transcript_in_table_order_wins(genome):
    with pysam.FastaFile(genome["fasta"]) as fasta:
        resolve = pm.contig_resolver(fasta.references)
    for path in (genome["gtf"], genome["refgene"]):
        tx = pm.read_annotation(path, resolve, "transcript")
        # 1-based 1000 | 1001 | 7000 (both: t1 first, +) | 8001 (t2 only) | 15001
        assert tx.lookup("1", np.array([999, 1000, 6999, 8000, 15000])).tolist() == [0, 1, 1, -1, 0]
        assert tx.lookup("2", np.array([5000])).tolist() == [-1]
        exons = pm.read_annotation(path, resolve, "exon")
        assert exons.lookup("1", np.array([1500, 3000, 7200, 7600])).tolist() == [1, 0, 1, 1]
        assert sorted(tx.contigs) == ["1", "2"]


def test_catalog_filters_normalises_and_reads_the_strand(genome, caplog):
    seqs = genome["seqs"]
    # a C or T centre in the + transcript (1:1001-8000) and one A/G centre in the - one
    pos_pyr = next(p for p in range(1100, 1900) if base_at(genome, "1", p) in "CT")
    pos_pur = next(p for p in range(8100, 14000) if base_at(genome, "1", p) in "AG")
    pos_intergenic = 16000
    ref_off = base_at(genome, "1", pos_intergenic)
    ref_pyr, ref_pur = base_at(genome, "1", pos_pyr), base_at(genome, "1", pos_pur)
    alt_pyr = "A" if ref_pyr != "A" else "G"
    alt_pur = "T"
    rows = [("s2", "chr1", pos_pyr, ref_pyr, alt_pyr),
            ("s1", "chr1", pos_pur, ref_pur, alt_pur),
            ("s1", "chr1", pos_pur, ref_pur, alt_pur),
            ("s1", "chr1", pos_intergenic, ref_off, "A" if ref_off != "A" else "C"),
            ("s1", "chr1", pos_pyr, "-", "A"),                      # insertion
            ("s1", "chr1", pos_pyr, ref_pyr + "A", "-"),             # deletion
            ("s1", "chr1", pos_pyr, ref_pyr, "N"),
            ("s1", "chr1", pos_pyr, ref_pyr, ref_pyr),
            ("s1", "chr1", 104, "N", "A"),
            ("s1", "chr1", 107, base_at(genome, "1", 107), "A"),      # N in the window
            ("s1", "chrUn", 50, "A", "C"),
            ("s3", "chr1", 1, base_at(genome, "1", 1), "A")]         # window off the contig
    with caplog.at_level(logging.WARNING, logger="pmsignature"):
        with pysam.FastaFile(genome["fasta"]) as fasta:
            tx = pm.read_annotation(genome["gtf"], pm.contig_resolver(fasta.references), "transcript")
            cat = pm.build_catalog(rows, fasta, pm.IND, tx)
    assert cat.samples == ["s1", "s2"]
    assert cat.mutation_count == [2, 1]
    assert sum(cat.removed.values()) == 9
    assert cat.removed["no transcript (intergenic)"] == 1
    assert cat.removed["contig not in the reference"] == 1
    assert "removed: no transcript (intergenic)" in caplog.text
    s1 = cat.features[cat.counts[0] > 0]
    s2 = cat.features[cat.counts[1] > 0]
    # s2: pyrimidine centre on a + transcript: strand + (0), flanks as read
    w = seqs["1"][pos_pyr - 3:pos_pyr + 2]
    sub = pm.SUBSTITUTIONS.index(f"{ref_pyr}>{alt_pyr}")
    assert s2.tolist() == [[sub] + ["ACGT".index(b) for b in w[:2] + w[3:]] + [0]]
    # s1: purine centre on a - transcript, reverse-complemented: + strand again
    w = seqs["1"][pos_pur - 3:pos_pur + 2].translate(COMP)[::-1]
    sub = pm.SUBSTITUTIONS.index(f"{ref_pur.translate(COMP)}>{alt_pur.translate(COMP)}")
    assert s1.tolist() == [[sub] + ["ACGT".index(b) for b in w[:2] + w[3:]] + [0]]
    assert cat.counts[0].max() == 2


def test_background_tables_are_seeded_distributions(genome, tmp_path):
    out1, out2 = tmp_path / "a", tmp_path / "b"
    for out in (out1, out2):
        assert pm.main(["background", "-r", genome["fasta"], "-a", genome["gtf"], "-o", str(out),
                        "--positions", "20000", "--seed", "4"]) == 0
    for mode in (pm.IND, pm.Mode("ind", 5, False), pm.FULL):
        a = (out1 / mode.table_name).read_bytes()
        assert a == (out2 / mode.table_name).read_bytes()
        table = pm.read_background(str(out1), mode)
        assert len(a.splitlines()) == mode.n_patterns
        assert (table > 0).all() and table.sum() == pytest.approx(1.0)
    first = (out1 / "bg.ind5_dir.txt").read_text().splitlines()[0].split("\t")
    assert first[0] == "1,1,1,1,1,1" and len(first[1].split(".")[1]) == 8
    # exonic composition: with a strand, '-' pyrimidine bases come from the - exons (purine-rich
    # reads of the + strand); both strands are populated
    ind = pm.read_background(str(out1), pm.IND).reshape(-1, 2).sum(axis=0)
    assert ind.min() > 0.2


def test_an_annotation_of_another_genome_stops_the_background_with_a_message_naming_it(genome, tmp_path):
    """Not a traceback from deep in the draw: the file, the reference's chromosomes, the key."""
    other = tmp_path / "other.gtf"
    other.write_text('chrZ\tsrc\texon\t1\t500\t.\t+\t.\tgene_id "g"; transcript_id "t";\n')
    with pytest.raises(SystemExit) as stop:
        pm.main(["background", "-r", genome["fasta"], "-a", str(other), "-o", str(tmp_path / "bg")])
    assert f"the annotation {other} has no exon on the reference's chromosomes (1, 2)" in str(stop.value)
    assert "set pmsignature.annotation" in str(stop.value)
    assert not (tmp_path / "bg").exists()


# ----------------------------------------------------------------------------- JSON and CLI

def write_cohort(genome, path, n_samples=5, per_sample=60, seed=0):
    """Random SNVs in the transcribed regions of the synthetic genome (chr-prefixed names)."""
    rng = np.random.default_rng(seed)
    lines = []
    for s in range(n_samples):
        for _ in range(per_sample):
            contig, lo, hi = [("1", 1001, 15000), ("2", 2001, 9000)][rng.integers(2)]
            pos = int(rng.integers(lo, hi))
            ref = base_at(genome, contig, pos)
            if ref == "N":
                continue
            alt = "ACGT".replace(ref, "")[rng.integers(3)]
            lines.append(f"sample{s}\tchr{contig}\t{pos}\t{ref}\t{alt}\n")
    lines.append("sample0\tchr1\t3000\t-\tA\n")                       # an insertion: dropped
    path.write_text("".join(lines))
    return path


@pytest.fixture(scope="module")
def background_dir(genome):
    out = genome["root"] / "bg"
    pm.main(["background", "-r", genome["fasta"], "-a", genome["refgene"], "-o", str(out),
             "--positions", "20000", "--seed", "1"])
    return out


def fit_cli(genome, background_dir, cohort, out, *extra):
    return pm.main(["fit", "-i", str(cohort), "-o", str(out), "-r", genome["fasta"],
                    "-a", genome["gtf"], "-b", str(background_dir), "--trialnum", "2", *extra])


def decimals(x):
    text = repr(float(x))
    return len(text.split(".")[1]) if "." in text else 0


def test_ind_json_has_paplots_layout_and_is_byte_reproducible(genome, background_dir, tmp_path):
    cohort = write_cohort(genome, tmp_path / "mutation.cut.txt")
    out, again = tmp_path / "pmsignature.ind.result.3.json", tmp_path / "again.json"
    assert fit_cli(genome, background_dir, cohort, out, "--signum", "3", "--seed", "2") == 0
    assert fit_cli(genome, background_dir, cohort, again, "--signum", "3", "--seed", "2") == 0
    assert out.read_bytes() == again.read_bytes()
    data = json.loads(out.read_text())
    assert list(data) == ["id", "ref", "alt", "strand", "mutation", "mutation_count"]
    assert data["id"] == [f"sample{i}" for i in range(5)]
    S, N = 2, 5
    assert np.array(data["ref"]).shape == (S, 5, 4)
    assert np.array(data["alt"]).shape == (S, 4, 4)
    assert np.array(data["strand"]).shape == (S, 2)
    for s in range(S):
        ref, alt = np.array(data["ref"][s]), np.array(data["alt"][s])
        for row in (0, 1, 3, 4):
            assert 0.996 <= ref[row].sum() <= 1.0
        assert ref[2][0] == ref[2][2] == 0
        assert 0.997 <= ref[2].sum() <= 1.0
        assert alt[0].tolist() == [0, 0, 0, 0] and alt[2].tolist() == [0, 0, 0, 0]
        assert alt[1][1] == 0 and alt[3][3] == 0
        assert ref[2][1] == pytest.approx(alt[1].sum(), abs=0.003)
        assert 0.999 <= sum(data["strand"][s]) <= 1.0
    triples = data["mutation"]
    assert [t[:2] for t in triples] == [[i, j] for i in range(N) for j in range(S + 1)]
    for i in range(N):
        assert 0.997 <= sum(t[2] for t in triples[i * 3:i * 3 + 3]) <= 1.0
    values = [v for t in triples for v in t[2:]] + list(np.ravel(data["ref"]))
    assert max(decimals(v) for v in values) <= 3
    # mutation_count: each sample's SNVs that survived the filters (the insertion is not counted)
    with pysam.FastaFile(genome["fasta"]) as fasta:
        tx = pm.read_annotation(genome["gtf"], pm.contig_resolver(fasta.references), "transcript")
        cat = pm.build_catalog(pm.read_mutation_positions(str(cohort)), fasta, pm.IND, tx)
    assert data["mutation_count"] == cat.mutation_count
    assert sum(data["mutation_count"]) == 5 * 60 - cat.removed["no transcript (intergenic)"]
    assert out.read_text().startswith('{"id":["sample0",')


def test_full_json_layout(genome, background_dir, tmp_path):
    cohort = write_cohort(genome, tmp_path / "mutation.cut.txt", n_samples=4, seed=3)
    out = tmp_path / "pmsignature.full.result.2.json"
    assert fit_cli(genome, background_dir, cohort, out, "--signum", "2", "--full") == 0
    data = json.loads(out.read_text())
    assert list(data) == ["id", "signature", "mutation", "mutation_count"]
    sig = np.array(data["signature"])
    assert sig.shape == (1, 6, 16)
    assert 0.99 <= sig.sum() <= 1.0
    assert max(decimals(float(v)) for v in sig.ravel()) <= 4
    assert len(data["mutation"]) == 4 * 2
    # full mode keeps intergenic SNVs: every SNV but the insertion counts
    assert sum(data["mutation_count"]) == 4 * 60


def test_no_background_uses_all_k_signatures(genome, tmp_path):
    cohort = write_cohort(genome, tmp_path / "mutation.cut.txt", n_samples=3, seed=4)
    out = tmp_path / "nobg.json"
    assert pm.main(["fit", "-i", str(cohort), "-o", str(out), "-r", genome["fasta"],
                    "-a", genome["gtf"], "--signum", "2", "--bgflag", "F", "--trialnum", "1"]) == 0
    data = json.loads(out.read_text())
    assert np.array(data["ref"]).shape == (2, 5, 4) and len(data["mutation"]) == 3 * 2


@pytest.mark.parametrize("content", ["", "s1\tchr1\t3000\t-\tA\ns1\tchr1\t16000\tA\tA\n",
                                     "s1\tchrUn\t10\tA\tC\n"])
@pytest.mark.parametrize("full", [False, True])
def test_too_few_mutations_give_genomons_empty_json(genome, background_dir, tmp_path, caplog,
                                                    content, full):
    cohort = tmp_path / "mutation.cut.txt"
    cohort.write_text(content)
    out = tmp_path / "out.json"
    with caplog.at_level(logging.WARNING, logger="pmsignature"):
        assert fit_cli(genome, background_dir, cohort, out, "--signum", "4",
                       *(["--full"] if full else [])) == 0
    expected = ('{"id":[],"signature":[],"mutation":[]}' if full else
                '{"id":[],"ref":[],"alt":[],"strand":[],"mutation":[]}')
    assert out.read_text() == expected
    assert "writing the empty JSON" in caplog.text


def test_truncation_matches_rs_floor():
    assert pm._trunc(0.2999, 3) == 0.299
    assert pm._trunc(1.0, 3) == 1 and isinstance(pm._trunc(1.0, 3), int)
    assert pm._trunc(0.00049, 3) == 0
    assert pm._trunc(0.12345678, 4) == 0.1234


def test_annot_utils_refgene_is_found_for_hg19():
    try:
        path = pm.annot_utils_refgene("hg19")
    except FileNotFoundError:
        pytest.skip("no .venv-sv (bin/install not run)")
    assert path.endswith("annot_utils/data/hg19/refGene.txt.gz")


def test_a_k_the_mutations_cannot_support_is_warned_about_in_the_job_s_log(genome, background_dir, tmp_path, caplog):
    """Issue 34: K far above what the cohort's mutations support gave degenerate fits silently."""
    cohort = write_cohort(genome, tmp_path / "mutation.cut.txt", n_samples=3, seed=5)  # 180 SNVs
    with caplog.at_level(logging.WARNING, logger="pmsignature"):
        assert fit_cli(genome, background_dir, cohort, tmp_path / "k2.json", "--signum", "2") == 0
    assert "likely degenerate" not in caplog.text
    with caplog.at_level(logging.WARNING, logger="pmsignature"):
        assert fit_cli(genome, background_dir, cohort, tmp_path / "k4.json", "--signum", "4") == 0
    assert "K = 4 signatures from" in caplog.text and "likely degenerate" in caplog.text
