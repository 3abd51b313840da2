"""Reference set-up into resources_dir (workflow/rules/reference.smk, genomon_smk.plan.setup_build):
a bare, gzipped, bgzipped or concatenated FASTA and a UCSC simpleRepeat table are built once,
reused by every run that names the same files, and rebuilt when one changes."""

import fcntl
import gzip
import json
import os
import shutil
import time
import re
import subprocess
from pathlib import Path

import pysam
import pytest

from conftest import RUN_DIR, SNAKEMAKE, job_stats, run_snakemake, scenario_variant, write_config
from genomon_smk.plan.reference import BWA_INDEX_SUFFIXES, bwa_contigs, reference_files
from genomon_smk.plan.regions import read_fai
from genomon_smk.plan.setup_build import (
    fasta_contigs,
    input_key,
    plan_reference,
    plan_simple_repeat,
    simple_repeat_problems,
    simple_repeat_table_problems,
    stem,
)
from genomon_smk.plan.rules import SETUP_RULES, SETUP_STAGE
from genomon_smk.steps.reference_setup import build_simple_repeat_db, concatenate_fasta
from test_mutation_workflow import result_path, result_rows
from test_stage_plan import printed_plan



def fasta_records(path):
    """(header line, sequence lines) of each record of a FASTA."""
    records = []
    for line in Path(path).read_text().splitlines():
        if line.startswith(">"):
            records.append((line, []))
        else:
            records[-1][1].append(line)
    return records


def write_records(path, records, trailing_newline=True):
    text = "\n".join(line for header, lines in records for line in (header, *lines))
    Path(path).write_text(text + ("\n" if trailing_newline else ""))


def split_reference(testdata, directory):
    """The test genome as a new user may bring it: chr1 and chr2 bgzipped, chr3 (a stand-in for
    the decoy sequences) plain and without a line end at its end."""
    records = fasta_records(testdata / "ref" / "genome.fa")
    directory.mkdir(parents=True, exist_ok=True)
    write_records(directory / "genome.fa", records[:2])
    pysam.tabix_compress(str(directory / "genome.fa"), str(directory / "genome.fa.bgz"), force=True)
    (directory / "genome.fa").unlink()
    write_records(directory / "decoy.fa", records[2:], trailing_newline=False)
    return [str(directory / "genome.fa.bgz"), str(directory / "decoy.fa")]


# --- planning: contigs, keys, what is built


def test_contigs_are_read_from_plain_gzip_bgzip_and_concatenated_fastas_as_faidx_counts(testdata, tmp_path):
    expected = read_fai(str(testdata / "ref" / "genome.fa.fai"))
    assert fasta_contigs([str(testdata / "bare" / "genome.fa.gz")]) == expected
    assert fasta_contigs(split_reference(testdata, tmp_path)) == expected
    odd = tmp_path / "odd.fa"
    odd.write_bytes(b">a desc\r\nAC GT\r\n\r\nNN\r\n>b\nA")  # CRLF, blanks, no final line end
    assert fasta_contigs([str(odd)]) == [("a", 6), ("b", 1)]
    (tmp_path / "reads.fq").write_text("@r1\nACGT\n+\nIIII\n")
    with pytest.raises(ValueError, match="not a FASTA"):
        fasta_contigs([str(tmp_path / "reads.fq")])


def test_the_key_follows_the_inputs_paths_sizes_and_dates(tmp_path):
    fasta = tmp_path / "hs37d5.fa.gz"
    fasta.write_bytes(gzip.compress(b">1\nACGT\n"))
    key = input_key([str(fasta)])
    assert key == input_key([str(fasta)]) and re.fullmatch(r"[0-9a-f]{12}", key)
    os.utime(fasta, ns=(0, 10**18))
    assert input_key([str(fasta)]) != key
    assert stem(str(fasta)) == "hs37d5" and stem("/x/GRCh37.fasta") == "GRCh37"


def test_an_indexed_reference_is_used_in_place_and_anything_else_is_built(testdata, tmp_path):
    indexed = str(testdata / "ref" / "genome.fa")
    assert plan_reference([indexed], str(tmp_path)).fasta == indexed
    assert not plan_reference([indexed], str(tmp_path)).built
    bare = plan_reference([str(testdata / "bare" / "genome.fa.gz")], str(tmp_path / "resources"))
    assert bare.built and re.fullmatch(rf"{tmp_path}/resources/reference/genome-[0-9a-f]{{12}}/genome\.fa", bare.fasta)
    # A genome plus decoys is one build; the genome alone is another.
    assert plan_reference([indexed, str(tmp_path / "decoy.fa")], str(tmp_path)).built
    prepared = plan_simple_repeat(str(tmp_path / "db.bed.gz"), str(tmp_path))
    (tmp_path / "db.bed.gz.tbi").touch()
    assert prepared.built and not plan_simple_repeat(str(tmp_path / "db.bed.gz"), str(tmp_path)).built


def test_a_simple_repeat_table_that_is_neither_ucsc_nor_indexed_is_refused(testdata, tmp_path):
    assert simple_repeat_problems(str(testdata / "bare" / "simpleRepeat.txt.gz")) == []
    cut = tmp_path / "cut.bed"
    cut.write_text("chr1\t10\t40\ttrf\n")
    assert "neither a tabix-indexed database" in simple_repeat_problems(str(cut))[0]
    assert "file not found" in simple_repeat_problems(str(tmp_path / "nope.txt.gz"))[0]


def test_a_table_to_build_with_a_bad_row_or_another_builds_contigs_is_refused(testdata, tmp_path):
    table = ucsc_table(testdata)
    contigs = read_fai(str(testdata / "ref" / "genome.fa.fai"))
    good = tmp_path / "good.txt"
    good.write_text("".join("\t".join(row) + "\n" for row in table))
    assert simple_repeat_table_problems(str(good), contigs) == []
    # UCSC names chr1 where the reference says 1: mutfilter simplerepeat looks up chr + name.
    assert simple_repeat_table_problems(str(good), [(c.removeprefix("chr"), n) for c, n in contigs]) == []
    renamed = tmp_path / "hg38.txt"
    renamed.write_text("".join("\t".join([row[0], "chrUn_" + row[1], *row[2:]]) + "\n" for row in table))
    [problem] = simple_repeat_table_problems(str(renamed), contigs)
    assert "none of the contigs" in problem and "chrUn_chr1" in problem
    for broken, message in (((2, "abc"), "whole numbers"), ((2, "999999"), "is after chromEnd")):
        rows = [list(row) for row in table]
        rows[4][broken[0]] = broken[1]
        bad = tmp_path / "bad.txt"
        bad.write_text("".join("\t".join(row) + "\n" for row in rows))
        [problem] = simple_repeat_table_problems(str(bad), contigs)
        assert f"{bad}:5: " in problem and message in problem, problem
        out = tmp_path / "db" / "simpleRepeat.bed.gz"
        out.parent.mkdir(exist_ok=True)
        with pytest.raises(ValueError, match=message):
            build_simple_repeat_db(str(bad), str(out))
        assert list(out.parent.iterdir()) == []  # no partial files left


# --- the set-up steps


def test_fastas_are_concatenated_in_order_whatever_their_compression(testdata, tmp_path):
    out = tmp_path / "built" / "genome.fa"
    out.parent.mkdir()
    concatenate_fasta(split_reference(testdata, tmp_path / "in"), str(out))
    assert out.read_bytes() == (testdata / "ref" / "genome.fa").read_bytes()
    assert not list(out.parent.glob("*.partial"))


def ucsc_table(testdata):
    with gzip.open(testdata / "bare" / "simpleRepeat.txt.gz", "rt") as handle:
        return [line.rstrip("\n").split("\t") for line in handle]


def test_the_database_is_the_ucsc_table_without_its_bin_column_sorted_and_indexed(testdata, tmp_path):
    table = ucsc_table(testdata)
    assert len(table) > 10 and all(len(row) == 17 for row in table)
    # Rows out of position order (a table dump need not be in it): the set-up sorts them.
    shuffled = tmp_path / "in" / "simpleRepeat.txt"
    shuffled.parent.mkdir()
    shuffled.write_text("".join("\t".join(row) + "\n" for row in reversed(table)))
    db = tmp_path / "simpleRepeat.bed.gz"
    assert build_simple_repeat_db(str(shuffled), str(db)) == len(table)
    with pysam.TabixFile(str(db)) as tabix:
        rows = [line.split("\t") for contig in tabix.contigs for line in tabix.fetch(contig)]
    assert sorted(rows, key=lambda row: (row[0], int(row[1]))) == rows
    assert sorted(map(tuple, rows)) == sorted(tuple(row[1:]) for row in table)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "simpleRepeat.bed.gz", "simpleRepeat.bed.gz.tbi"]


# --- the workflow: built once, reused, rebuilt when an input changes


# The reference's set-up rules: pmsignature's background is set up only for a cohort whose
# pmsignature runs (tests/test_pmsignature_stage.py), which the .test configs' is not.
REFERENCE_SETUP_RULES = SETUP_RULES - {"pmsignature_background"}


def setup_jobs(result):
    """The set-up jobs of a dry run (Snakemake's Job stats), by rule."""
    return {rule: count for rule, count in job_stats(result.stdout + result.stderr).items() if rule in SETUP_RULES}


@pytest.mark.workflow
def test_a_list_of_fastas_is_built_once_reused_by_another_output_dir_and_rebuilt_when_changed(testdata, tmp_path):
    sources = split_reference(testdata, tmp_path / "downloads")
    resources = tmp_path / "shared-resources"
    first = write_config(tmp_path / "one", testdata, reference=sources, resources_dir=str(resources),
                         output_dir=str(tmp_path / "one" / "results"))
    run_snakemake(first, "setup")
    [built] = list((resources / "reference").iterdir())
    fasta = built / "genome.fa"
    assert fasta.read_bytes() == (testdata / "ref" / "genome.fa").read_bytes()
    assert read_fai(f"{fasta}.fai") == bwa_contigs(f"{fasta}.ann") == read_fai(str(testdata / "ref" / "genome.fa.fai"))
    assert all(Path(f"{fasta}{suffix}").stat().st_size > 0 for suffix in BWA_INDEX_SUFFIXES)
    assert (tmp_path / "one" / "results" / "logs" / "reference_bwa_index" / f"{built.name}.log").exists()

    # Another project (its own output directory) naming the same files plans no set-up job.
    second = write_config(tmp_path / "two", testdata, reference=sources, resources_dir=str(resources),
                          output_dir=str(tmp_path / "two" / "results"))
    result = run_snakemake(second, "-n", "--quiet", "rules")
    assert setup_jobs(result) == {} and "map_reads" in job_stats(result.stdout + result.stderr)
    stages, rules = printed_plan(result.stderr)
    assert stages[SETUP_STAGE] == 0 and not SETUP_RULES & set(rules)
    assert run_snakemake(second, "setup").returncode == 0 and list((resources / "reference").iterdir()) == [built]

    # A changed FASTA is another build, in its own directory; the first stays for whoever uses it.
    Path(sources[1]).write_text(Path(sources[1]).read_text() + "\n")
    result = run_snakemake(second, "-n", "--quiet", "rules")
    assert setup_jobs(result) == {rule: 1 for rule in REFERENCE_SETUP_RULES - {"simple_repeat_db"}}
    stages, rules = printed_plan(result.stderr)
    assert stages[SETUP_STAGE] == 3 and rules["reference_bwa_index"] == 1
    run_snakemake(second, "setup")
    assert len(list((resources / "reference").iterdir())) == 2 and fasta.exists()


@pytest.mark.workflow
def test_two_projects_setting_up_the_same_build_at_once_both_succeed(testdata, tmp_path):
    """The second run's set-up jobs wait for the first's (a lock in the build directory) and find
    the files built, instead of writing the same partial files and deleting the other's."""
    resources = tmp_path / "shared-resources"
    sources = split_reference(testdata, tmp_path / "downloads")
    runs = []
    for name in ("one", "two"):
        config = write_config(tmp_path / name, testdata, reference=sources, resources_dir=str(resources),
                              output_dir=str(tmp_path / name / "results"))
        runs.append(subprocess.Popen([SNAKEMAKE, "--profile", "profiles/local", "--configfile", str(config),
                                      "--cores", "2", "--directory", str(tmp_path / name), "setup"], cwd=RUN_DIR, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True))
    outputs = [run.communicate(timeout=600)[0] for run in runs]
    assert [run.returncode for run in runs] == [0, 0], "\n".join(output[-3000:] for output in outputs)
    [built] = list((resources / "reference").iterdir())
    fasta = built / "genome.fa"
    assert fasta.read_bytes() == (testdata / "ref" / "genome.fa").read_bytes()
    assert read_fai(f"{fasta}.fai") == bwa_contigs(f"{fasta}.ann") == read_fai(str(testdata / "ref" / "genome.fa.fai"))
    assert not [p.name for p in built.iterdir() if ".partial" in p.name]


def file_states(directory):
    """(inode, size, mtime) of each file of a directory, by name."""
    return {path.name: (path.stat().st_ino, path.stat().st_size, path.stat().st_mtime_ns)
            for path in sorted(directory.iterdir()) if path.is_file() and not path.name.startswith(".")}


@pytest.mark.workflow
def test_a_second_project_planned_mid_build_removes_and_rebuilds_nothing(testdata, tmp_path):
    """Issue 34: a second project's set-up jobs, planned while the first was building and run
    after it built, had the shared files as outputs: Snakemake removed them before each job (under
    the first project's readers) and the job built them again (a second hour-long bwa index). The
    build here is held mid-way by its lock (the first project's bwa index at work), while the
    second project plans and starts; then the first "finishes" and releases the lock."""
    resources = tmp_path / "shared-resources"
    sources = split_reference(testdata, tmp_path / "downloads")
    configs = {name: write_config(tmp_path / name, testdata, reference=sources, resources_dir=str(resources),
                                  output_dir=str(tmp_path / name / "results")) for name in ("one", "two")}
    one_link = plan_reference(sources, str(resources), str(tmp_path / "one" / "results")).fasta
    run_snakemake(configs["one"], one_link)  # its FASTA built: the indexes still to come
    shared = resources / "reference" / Path(one_link).parent.name
    assert sorted(file_states(shared)) == ["genome.fa"]
    with open(shared / ".build.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        two = subprocess.Popen([SNAKEMAKE, "--profile", "profiles/local", "--configfile", str(configs["two"]),
                                "--cores", "1", "--directory", str(tmp_path / "two"), "setup"], cwd=RUN_DIR,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        logs = tmp_path / "two" / "results" / "logs"
        deadline = time.monotonic() + 120
        while not list(logs.glob("reference_*/*.log")) and two.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(1)  # the second project's first set-up job waits for the lock
        # The first project's indexes, written as its jobs write them (beside, then renamed).
        for suffix in (".fai", *BWA_INDEX_SUFFIXES):
            shutil.copyfile(testdata / "ref" / f"genome.fa{suffix}", shared / f"genome.fa{suffix}.partial")
            os.replace(shared / f"genome.fa{suffix}.partial", shared / f"genome.fa{suffix}")
        built = file_states(shared)
    output = two.communicate(timeout=600)[0]
    assert two.returncode == 0, output[-4000:]
    assert file_states(shared) == built  # nothing removed, nothing built again
    links = Path(plan_reference(sources, str(resources), str(tmp_path / "two" / "results")).fasta)
    assert [os.path.realpath(path) for path in reference_files(str(links))] == \
        [str(shared / name) for name in ["genome.fa", "genome.fa.fai", *(f"genome.fa{s}" for s in BWA_INDEX_SUFFIXES)]]
    assert os.path.isdir(links.parent)  # made at the run's start: later parses keep the links
    assert "is built (by another run, or an earlier one); linking it" in (
        logs / "reference_bwa_index" / f"{shared.name}.log").read_text()
    # Its next run reads the build through its links (no rule of its inputs changes), and a third
    # project reads the complete build in place: no set-up job in either.
    assert setup_jobs(run_snakemake(configs["two"], "-n", "--quiet", "rules", "--directory",
                                    str(tmp_path / "two"))) == {}
    third = write_config(tmp_path / "three", testdata, reference=sources, resources_dir=str(resources),
                         output_dir=str(tmp_path / "three" / "results"))
    assert setup_jobs(run_snakemake(third, "-n", "--quiet", "rules")) == {}
    assert plan_reference(sources, str(resources), str(tmp_path / "three" / "results")).fasta == str(
        shared / "genome.fa")


@pytest.mark.workflow
def test_resources_default_to_the_working_directory(testdata, tmp_path):
    work = tmp_path / "project"
    config = write_config(work, testdata, simple_repeat_db=str(testdata / "bare" / "simpleRepeat.txt.gz"))
    run_snakemake(config, "--directory", str(work), "setup")
    [db] = (work / "resources" / "simple_repeat").glob("simpleRepeat-*/simpleRepeat.bed.gz")
    assert Path(f"{db}.tbi").exists() and not (RUN_DIR / "resources" / "simple_repeat" / db.parent.name).exists()


# --- the bundled scenario: a bare gzipped FASTA and a UCSC table, run end to end


@pytest.mark.workflow
def test_the_bundled_run_started_from_a_bare_gzipped_fasta_and_staged_what_it_built(pipeline_run):
    resources = pipeline_run.parent / "resources"
    [fasta] = (resources / "reference").glob("genome-*/genome.fa")
    for suffix in (".fai", *BWA_INDEX_SUFFIXES):
        assert Path(f"{fasta}{suffix}").stat().st_size > 0, suffix
    # The run planned before the build was complete: it reads the build through its own links.
    staged = [entry["source"] for entry in json.loads((pipeline_run / "reference" / "staged.json").read_text())]
    assert [os.path.realpath(path) for path in staged[:2]] == [str(fasta), f"{fasta}.fai"]
    assert staged[0] == str(pipeline_run / "reference" / fasta.parent.name / "genome.fa")
    assert str(fasta) + ".bwt" in map(os.path.realpath, staged)
    for rule in REFERENCE_SETUP_RULES:
        assert list((pipeline_run / "logs" / rule).glob("*.log")), rule


@pytest.mark.workflow
def test_another_output_dir_builds_nothing(pipeline_run, scenario_root, tmp_path):
    config = scenario_variant(scenario_root, "config", tmp_path)
    result = run_snakemake(config, "-n", "--quiet", "rules")
    assert setup_jobs(result) == {} and job_stats(result.stdout + result.stderr)["map_reads"] > 0


def expected_repeats(table, chrom, start, end):
    """simplerepeat's two columns for a call at [start - 1, end) from the UCSC table: the first
    five overlapping repeats in position order."""
    hits = sorted((int(row[2]), int(row[3]), row[16]) for row in table
                  if row[1] == chrom and int(row[2]) < end and start - 1 < int(row[3]))[:5]
    if not hits:
        return "---", "---"
    return ";".join(f"{chrom}:{s}-{e}" for s, e, _ in hits), ";".join(unit for _, _, unit in hits)


@pytest.mark.workflow
def test_the_simple_repeat_columns_are_filled_from_the_ucsc_table(pipeline_run, testdata):
    table = ucsc_table(testdata)
    _, rows = result_rows(result_path(pipeline_run, ".txt"))
    filled = 0
    for row in rows:
        expected = expected_repeats(table, row["Chr"], int(row["Start"]), int(row["End"]))
        assert (row["simple_repeat_pos"], row["simple_repeat_seq"]) == expected, row
        filled += expected[0] != "---"
    # A planted somatic SNV lies in a 24 bp-unit tandem repeat of chr2.
    assert filled >= 1


@pytest.mark.workflow
def test_llio_transfer_at_the_start_leaves_a_reference_still_to_build_to_its_readers(testdata, tmp_path):
    """Inside a PJM job with llio_transfer staging, the whole-run transfer at the start needs the
    reference's files: while the set-up jobs have still to build them it is skipped (their
    readers transfer them), and the next run transfers what was built, once, at its start."""
    calls = tmp_path / "llio.log"
    fake = tmp_path / "llio_transfer"
    fake.write_text(f'#!/bin/sh\necho "$@" >> {calls}\n')
    fake.chmod(0o755)
    config = write_config(tmp_path, testdata, reference=str(testdata / "bare" / "genome.fa.gz"),
                          resources_dir=str(tmp_path / "resources"), storage={"reference_staging": "llio_transfer"})
    env = dict(os.environ, PJM_JOBID="4242", LLIO_TRANSFER=str(fake))
    staged = tmp_path / "results" / "reference" / "staged.json"
    first = run_snakemake(config, str(staged), env=env)
    assert "the reference is built by this run's set-up jobs" in first.stderr
    # (the project's links to the build: it planned before the build was complete)
    [fasta] = (tmp_path / "results" / "reference").glob("genome-*/genome.fa")
    assert fasta.is_symlink()
    files = " ".join(reference_files(str(fasta)))
    # stage_reference transferred the files it found built; the end of the run purged them.
    assert calls.read_text().splitlines() == [files, f"--purge {files}"]
    staged.unlink()
    second = run_snakemake(config, str(staged), env=env)
    # The start transferred them for the whole job, and stage_reference did not again.
    assert "built by this run's set-up jobs" not in second.stderr
    assert calls.read_text().splitlines()[2:] == [files, f"--purge {files}"]


def test_a_project_that_planned_links_keeps_them_once_the_build_is_complete(tmp_path):
    """A cluster job parses the workflow again, maybe after another project completed the build:
    the project's link directory (made when the links were planned) keeps it on its links, so
    the set-up rule the job runs still exists."""
    source = tmp_path / "genome.fa.gz"
    source.write_bytes(gzip.compress(b">1\nACGT\n"))
    resources, project = tmp_path / "resources", tmp_path / "results"
    planned = plan_reference([str(source)], str(resources), str(project))
    assert planned.built and planned.link_directory == os.path.dirname(planned.fasta)
    assert planned.fasta.startswith(f"{project}/reference/genome-")
    for path in reference_files(planned.shared):  # another project completes the build
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text("x")
    assert plan_reference([str(source)], str(resources), str(tmp_path / "other")).fasta == planned.shared
    assert plan_reference([str(source)], str(resources), str(project)).fasta == planned.shared  # no link dir
    os.makedirs(planned.link_directory)
    assert plan_reference([str(source)], str(resources), str(project)) == planned
