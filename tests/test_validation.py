"""Bad input is refused before any job runs, with a message naming the problem, and nothing is
written. Most cases are Snakemake's parse of the workflow in this process (conftest.parse_workflow:
the same parse-time checks a `snakemake -n` makes, the refusal its WorkflowError); two are a real
`snakemake -n` (a misspelled key, as the user sees it printed; the sample sheets, with a FASTQ
that root cannot read). Problems that are collected together (the sample sheets, the panel BAMs)
share one refusal and are checked one by one."""

import errno
import os
import re
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pysam
import pytest
import snakemake
import yaml
from snakemake.exceptions import WorkflowError

from conftest import REPO, RUN_DIR, SNAKEMAKE, parse_workflow, run_snakemake, write_config
from genomon_smk.plan.config_check import config_problems
from genomon_smk.plan.samplesheet import load_schema
from genomon_smk.plan.snakemake_adapter import fixed_threads
from genomon_smk.plan.storage_plan import parse_size
from genomon_smk.plan.regions import make_regions, read_fai

def refusal(directory, testdata, env, prefix=(), **overrides):
    """The output of a dry run (a `snakemake -n` process) of a config with overrides that must be
    refused, after checking that it was refused and wrote nothing."""
    config = write_config(directory, testdata, **overrides)
    command = [*prefix, SNAKEMAKE, "--profile", "profiles/local", "--configfile", str(config), "--cores", "2", "-n"]
    result = subprocess.run(command, cwd=RUN_DIR, capture_output=True, text=True, env=env)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output[-3000:]
    assert "invalid input" in output or "invalid config" in output or "WorkflowError" in output, output[-3000:]
    assert not (directory / "results").exists()
    return output


def parse_refusal(directory, testdata, **overrides):
    """The message of the workflow's refusal of a config with overrides (Snakemake's parse in this
    process), after checking that nothing was written."""
    config = write_config(directory, testdata, **overrides)
    with pytest.raises(WorkflowError) as refused:
        parse_workflow(config)
    assert not (directory / "results").exists()
    return str(refused.value)


def refused(tmp_path, testdata, expected, **overrides):
    message = parse_refusal(tmp_path, testdata, **overrides)
    assert expected in message, message[-3000:]
    return message


# --- config


@pytest.mark.workflow
def test_a_misspelled_config_key_is_named_with_its_line_and_the_key_meant(tmp_path, testdata, no_slurm_probe):
    output = refusal(tmp_path, testdata, no_slurm_probe, mutation_utils={"pair_params": "x"})
    line = next(number for number, text in enumerate((tmp_path / "config.yaml").read_text().splitlines(), 1)
                if text.startswith("mutation_utils:"))
    assert f"config.yaml:{line}: key 'mutation_utils': unknown key (did you mean 'mutation_util'?)" in output
    assert "$schema" not in output and len(output.splitlines()) < 40, output  # not jsonschema's dump
    assert "WorkflowError" not in output and "Traceback" not in output, output  # the problem alone


CONFIG_SCHEMA = load_schema(str(REPO / "workflow" / "schemas"), "config")


@pytest.mark.parametrize("overrides, expected", [
    ({"split": {"chunk_count": 3}}, "key 'split.chunk_count': unknown key (did you mean 'chunks'?)"),
    ({"split": {"chunks": "eight"}}, "key 'split.chunks': 'eight' is not of type 'integer'"),
    ({"split": {"chunks": 0}}, "key 'split.chunks': 0 is less than the minimum of 1"),
    # 10000 chunks used to fail at planning with an unrelated MissingInputException.
    ({"split": {"chunks": 10000}}, "key 'split.chunks': 10000 is greater than the maximum of 9999"),
    ({"storage": {"rules": {"map": {"temp": "nodelocal"}}}}, "key 'storage.rules.map.temp': 'nodelocal' is not one of"),
    # The final results stay in output_dir: the key is accepted, another tier is not.
    ({"storage": {"rules": {"merge_bam": {"output": "shared_tmp"}}}},
     "key 'storage.rules.merge_bam.output': 'global' was expected"),
    ({"reference": []}, "key 'reference': [] should be non-empty"),
    ({"reference": ["genome.fa", 3]}, "key 'reference.1': 3 is not of type 'string'"),
    ({"map": {"threads": "four"}}, "key 'map.threads': 'four': not a thread count: give a whole number, 1 or more, or auto"),
    ({"markdup": {"threads": 0}}, "key 'markdup.threads': 0: not a thread count: give a whole number, 1 or more, or auto"),
    ({"regions": {"min_mutation_regions": "many"}},
     "key 'regions.min_mutation_regions': 'many': not a number of regions: give a whole number from 1 to 1000, or auto"),
    ({"regions": {"min_mutation_regions": 1001}},
     "key 'regions.min_mutation_regions': 1001: not a number of regions: give a whole number from 1 to 1000, or auto"),
])
def test_config_values_are_checked_against_the_schema(tmp_path, testdata, overrides, expected):
    path = write_config(tmp_path, testdata, **overrides)
    config = yaml.safe_load(path.read_text())
    problems = config_problems(config, CONFIG_SCHEMA, [str(path)])
    assert len(problems) == 1 and problems[0].startswith(f"{path}:") and expected in problems[0], problems
    assert config_problems(yaml.safe_load((REPO / ".test" / "config" / "config.yaml").read_text()),
                           CONFIG_SCHEMA, []) == []


def test_a_fai_of_another_fasta_is_refused_before_any_job(tmp_path, testdata):
    reference = tmp_path / "ref"
    shutil.copytree(testdata / "ref", reference)
    fai = reference / "genome.fa.fai"
    first, *rest = fai.read_text().splitlines(True)
    name, length, *columns = first.split("\t")
    fai.write_text("\t".join([name, str(int(length) - 100), *columns]) + "".join(rest))
    refused(tmp_path, testdata, "genome.fa.fai does not match the FASTA", reference=str(reference / "genome.fa"))


def test_missing_reference(tmp_path, testdata):
    refused(tmp_path, testdata, "reference: file not found", reference=str(tmp_path / "nope.fa"))
    decoy = str(tmp_path / "decoy.fa")
    refused(tmp_path, testdata, f"reference: file not found: {decoy}",
            reference=[str(testdata / "bare" / "genome.fa.gz"), decoy])


def test_a_simple_repeat_table_of_another_format_is_refused(tmp_path, testdata):
    table = tmp_path / "repeats.bed"
    table.write_text("chr1\t100\t130\ttrf\n")
    refused(tmp_path, testdata, "is neither a tabix-indexed database", simple_repeat_db=str(table))


def reference_copy(tmp_path, testdata, *suffixes):
    """The test reference FASTA with only the given index files next to it."""
    fasta = tmp_path / "ref" / "ref.fa"
    fasta.parent.mkdir()
    for suffix in ("", *suffixes):
        shutil.copy(testdata / "ref" / f"genome.fa{suffix}", f"{fasta}{suffix}")
    return fasta


@pytest.mark.parametrize("beside", [(".amb", ".ann", ".bwt", ".pac", ".sa"), (".fai",)], ids=["no .fai", "no bwa index"])
def test_a_reference_without_all_its_indexes_is_built_in_resources(tmp_path, testdata, beside):
    """Not refused (as before the set-up rules) but planned: an indexed copy in resources_dir;
    nothing is written beside the user's FASTA."""
    fasta = reference_copy(tmp_path, testdata, *beside)
    config = write_config(tmp_path, testdata, reference=str(fasta), resources_dir=str(tmp_path / "resources"))
    result = run_snakemake(config, "-n", "--quiet", "rules")
    output = result.stdout + result.stderr
    for rule in ("reference_fasta", "reference_fai", "reference_bwa_index"):
        assert re.search(rf"^{rule} +1$", output, flags=re.M), rule
    assert sorted(p.name for p in fasta.parent.iterdir()) == sorted(["ref.fa", *(f"ref.fa{s}" for s in beside)])


def test_regions_that_do_not_cover_the_reference(tmp_path, testdata):
    bed = tmp_path / "regions.bed"
    bed.write_text("chr1\t0\t1000\n")
    refused(tmp_path, testdata, "chr1:1001-80000 is in no region", regions={"file": str(bed)})


def test_regions_that_overlap(tmp_path, testdata):
    bed = tmp_path / "regions.bed"
    contigs = read_fai(str(testdata / "ref" / "genome.fa.fai"))
    bed.write_text("".join(f"{name}\t0\t{length}\n" for name, length in contigs) + "chr2\t100\t200\n")
    refused(tmp_path, testdata, "chr2:101-200 overlaps another region", regions={"file": str(bed)})


def test_missing_config_file_is_explained():
    with pytest.raises(WorkflowError, match="no config file given: run with --configfile FILE"):
        parse_workflow()


def test_a_plan_that_exceeds_a_tier_capacity_is_refused(tmp_path, testdata):
    message = refused(
        tmp_path, testdata, "storage tier shared_tmp: the plan needs about",
        storage={"capacity": {"shared_tmp": "1M"}},
    )
    assert "capacity is 1.0 MiB" in message


# --- sample sheets: one sheet with every problem, one dry run, each message checked


UNSAFE_NAMES = {
    "slash": "tumor/x",
    "dot_dot": "x..y",
    "space": "pon 9",
    "quote": "o'brien",
    "command_substitution": "x$(id)",
    "semicolon": "p;rm -rf x",
}


def fastq_pair(directory, name):
    """A FASTQ pair of `name` (content is the split's business; the sheet check needs files)."""
    for mate in (1, 2):
        (directory / f"{name}_R{mate}.fq").write_text(f"@{name}_r1/{mate}\nACGT\n+\nIIII\n")  # distinct data: copies are refused
    return f"{name}_R1.fq", f"{name}_R2.fq"


def drop_read_permission():
    """The command prefix that makes a file without read permission unreadable: as root, drop the
    capabilities that let root read any file (what a root-squashed NFS mount does to root)."""
    return ("setpriv", "--bounding-set=-dac_override,-dac_read_search") if os.geteuid() == 0 else ()


@pytest.fixture(scope="module")
def sheet_refusal(tmp_path_factory, testdata, no_slurm_probe):
    directory = tmp_path_factory.mktemp("sheets")
    rows = []
    for case, name in UNSAFE_NAMES.items():
        rows.append((name, *fastq_pair(directory, case)))
    rows.append(("twice", *fastq_pair(directory, "twice")))
    rows.append(("twice_again", "twice_R1.fq", fastq_pair(directory, "twice_again")[1]))
    rows.append(("missing", "missing_R1.fq", fastq_pair(directory, "missing")[1]))
    (directory / "missing_R1.fq").unlink()
    rows.append(("unreadable", *fastq_pair(directory, "unreadable")))
    (directory / "unreadable_R1.fq").chmod(0)
    rows.append(("directory", *fastq_pair(directory, "directory")))
    (directory / "directory_R1.fq").unlink()
    (directory / "directory_R1.fq").mkdir()
    rows += [(sample, *fastq_pair(directory, sample)) for sample in ("tumor", "normal", "pon1")]
    (directory / "samples.tsv").write_text("sample\tfq1\tfq2\n" + "".join("\t".join(row) + "\n" for row in rows))
    (directory / "pairs.tsv").write_text("tumor\tnormal\tpanel\ntumor\tnormal_typo\tpanel1\ntumor\tnormal\t\n")
    return directory, refusal(
        directory, testdata, no_slurm_probe, prefix=drop_read_permission(),
        samples=str(directory / "samples.tsv"), pairs=str(directory / "pairs.tsv"),
        control_panels={"panel1": ["pon1", "pon_typo"]},
    )


@pytest.mark.parametrize("case", UNSAFE_NAMES)
def test_unsafe_sample_names_are_refused(sheet_refusal, case):
    directory, output = sheet_refusal
    line = 2 + list(UNSAFE_NAMES).index(case)
    name = UNSAFE_NAMES[case]
    assert f"{directory}/samples.tsv:{line}: field 'sample': {name!r} is not a safe name" in output


SHEET_PROBLEMS = {
    "same_fastq_twice": "samples.tsv:9: field 'fq1': {d}/twice_R1.fq is already used at {d}/samples.tsv:8",
    "missing_fastq": "samples.tsv:10: field 'fq1': file not found: {d}/missing_R1.fq",
    "unreadable_fastq": "samples.tsv:11: field 'fq1': file not readable: {d}/unreadable_R1.fq",
    "fastq_is_a_directory": "samples.tsv:12: field 'fq1': not a regular file: {d}/directory_R1.fq",
    "pair_naming_an_unknown_sample": "pairs.tsv:2: field 'normal': unknown sample 'normal_typo' (not in the samples table)",
    "tumor_twice_in_pairs": "pairs.tsv:3: tumor 'tumor' already has a row at {d}/pairs.tsv:2",
    "panel_naming_an_unknown_sample": "config: control_panels: panel 'panel1' names unknown sample 'pon_typo'",
}


@pytest.mark.parametrize("case", SHEET_PROBLEMS)
def test_sample_sheet_problems_are_refused(sheet_refusal, case):
    directory, output = sheet_refusal
    assert SHEET_PROBLEMS[case].format(d=directory) in output


def test_tables_with_missing_or_unknown_columns_are_refused(tmp_path, testdata):
    (tmp_path / "samples.tsv").write_text("sample\tfq1\ntumor\tt_R1.fq\n")
    (tmp_path / "pairs.tsv").write_text("tumor\tnormal\tcolour\ntumor\tnormal\tred\n")
    output = parse_refusal(tmp_path, testdata, samples=str(tmp_path / "samples.tsv"),
                           pairs=str(tmp_path / "pairs.tsv"), control_panels={})
    assert f"{tmp_path}/samples.tsv:1: missing column(s): fq2 (header is: sample, fq1)" in output
    assert f"{tmp_path}/pairs.tsv:1: unknown column(s): colour" in output


def test_genomon_sheet_with_a_sample_twice_and_a_panel_of_unknown_samples(tmp_path, testdata):
    for name in ("t", "n", "p"):
        fastq_pair(tmp_path, name)
    sheet = tmp_path / "genomon.csv"
    sheet.write_text("[fastq]\nt,t_R1.fq,t_R2.fq\nn,n_R1.fq,n_R2.fq\nt,p_R1.fq,p_R2.fq\n"
                     "[mutation_call]\nt,n,panel1\n[controlpanel]\npanel1,n,ghost\n")
    output = parse_refusal(tmp_path, testdata, genomon_sample_sheet=str(sheet), samples=None, pairs=None,
                           control_panels=None)
    twice = output.index(f"{sheet}:4: sample 't' is defined twice in [fastq]")
    assert output.index(f"{sheet}:8: panel 'panel1' names unknown sample 'ghost'") > twice  # in line order
    # Each of the sheet's problems counts as one (not the sheet's list as one problem).
    assert output.startswith("genomon-smk: invalid config or input, refused before any job (2 problems;"), output


# --- control-panel BAMs: one dry run, each problem checked


def header_only_bam(path, contigs):
    """An indexed BAM with these @SQ lines and no reads: all the parse-time check reads."""
    header = {"HD": {"VN": "1.6", "SO": "coordinate"}, "SQ": [{"SN": name, "LN": length} for name, length in contigs]}
    with pysam.AlignmentFile(str(path), "wb", header=header):
        pass
    pysam.index(str(path))


@pytest.fixture(scope="module")
def panel_refusal(tmp_path_factory, testdata):
    directory = tmp_path_factory.mktemp("panel")
    contigs = read_fai(str(testdata / "ref" / "genome.fa.fai"))
    (directory / "panel").mkdir()
    header_only_bam(directory / "panel" / "same.bam", contigs)
    header_only_bam(directory / "panel" / "renamed.bam", [(name.replace("chr", ""), length) for name, length in contigs])
    header_only_bam(directory / "panel" / "longer.bam", [(name, length + 1) for name, length in contigs[:2]] + contigs[2:])
    (directory / "panel" / "unindexed.bam").write_bytes((directory / "panel" / "same.bam").read_bytes())
    members = ["pon1", "panel/same.bam", "panel/renamed.bam", "panel/longer.bam", "panel/unindexed.bam"]
    return directory, parse_refusal(directory, testdata, control_panels={"panel1": members})


PANEL_PROBLEMS = {
    "missing_index": "panel 'panel1': BAM has no index (.bam.bai or .bai): {d}/panel/unindexed.bam; "
                     "build it with: samtools index {d}/panel/unindexed.bam",
    "other_contig_names": "panel 'panel1': BAM {d}/panel/renamed.bam was mapped to another reference (its header's "
                          "contigs differ from {fai}): reference contig(s) not in the BAM: chr1, chr2, chr3; "
                          "BAM contig(s) not in the reference: 1, 2, 3",
    "other_contig_lengths": "panel 'panel1': BAM {d}/panel/longer.bam was mapped to another reference (its header's "
                            "contigs differ from {fai}): contig lengths differ: chr1 (BAM 80001 bp, reference 80000 bp), "
                            "chr2 (BAM 60001 bp, reference 60000 bp)",
}


@pytest.mark.parametrize("case", PANEL_PROBLEMS)
def test_unusable_panel_bams_are_refused(panel_refusal, testdata, case):
    directory, output = panel_refusal
    fai = testdata / "ref" / "genome.fa.fai"
    assert PANEL_PROBLEMS[case].format(d=directory, fai=fai) in output


def test_a_panel_bam_of_the_same_reference_passes(panel_refusal):
    directory, output = panel_refusal
    assert f"{directory}/panel/same.bam" not in output


# --- a good config


def test_dry_run_shows_every_job_with_a_static_dag(tmp_path, testdata, no_slurm_probe):
    config = write_config(tmp_path, testdata, split={"chunks": 3})
    result = run_snakemake(config, "-n", "--quiet", "rules", env=no_slurm_probe)
    counts = {}
    for line in result.stdout.splitlines():
        fields = line.split()
        if len(fields) == 2 and fields[1].isdigit():
            counts[fields[0]] = int(fields[1])
    samples, chunks = 5, 3
    cut = yaml.safe_load(config.read_text())["regions"]
    regions = make_regions(str(testdata / "ref" / "genome.fa.fai"), None, cut["max_length"], cut["pack_bp"])
    assert len(regions) > 4  # the first contig cut in two, and the unmapped region
    assert counts["split_fastq"] == samples
    assert counts["map_reads"] == samples * chunks
    assert counts["gather_map"] == samples
    assert counts["markdup"] == samples * len(regions)
    assert counts["merge_bam"] == samples


def test_dry_run_prints_the_storage_plan(tmp_path, testdata, no_slurm_probe):
    config = write_config(tmp_path, testdata, storage={"capacity": {"node_local": "10G"}})
    result = run_snakemake(config, "-n", env=no_slurm_probe)
    plan = result.stderr[result.stderr.index("Storage plan"):]
    assert re.search(r"^  map +temp +node_local", plan, flags=re.M), plan
    assert "shared_tmp" in plan and "10.0 GiB" in plan


def test_the_storage_plan_leaves_out_the_temporaries_of_samples_already_mapped(tmp_path, testdata, no_slurm_probe):
    """A cohort whose BAMs are made (a rerun that adds a pair or retunes a filter) makes none of
    their split, map and markdup files again: the capacity check does not count them."""
    def shared_tmp_peak(result):
        plan = result.stderr[result.stderr.index("Storage plan"):]
        return parse_size(re.search(r"^  shared_tmp +(\S+ \S+)", plan, flags=re.M).group(1)), plan

    before, _ = shared_tmp_peak(run_snakemake(write_config(tmp_path, testdata), "-n", env=no_slurm_probe))
    marks = []
    for sample in ("tumor", "normal", "pon1", "pon2", "pon3"):  # made BAMs' marks: merge_bam writes the .md5 last
        marks.append(tmp_path / "results" / "bam" / sample / f"{sample}.markdup.bam.md5")
        marks[-1].parent.mkdir(parents=True)
        marks[-1].write_text(f"0  {sample}.markdup.bam\n")
    after, plan = shared_tmp_peak(run_snakemake(write_config(tmp_path, testdata), "-n", env=no_slurm_probe))
    assert "(5 of 5 mapped sample(s) have their final BAM: counted with it only)" in plan, plan
    assert after < before, plan
    # A capacity between the two: planned now, refused while the BAMs are still to be made.
    config = write_config(tmp_path, testdata, storage={"capacity": {"shared_tmp": (before + after) // 2}})
    planned = run_snakemake(config, "-n", env=no_slurm_probe)
    assert planned.returncode == 0, planned.stderr[-3000:]
    for mark in marks:
        mark.unlink()
    refused = run_snakemake(config, "-n", env=no_slurm_probe, check=False)
    assert refused.returncode != 0 and "storage tier shared_tmp: the plan needs about" in refused.stderr


@pytest.mark.parametrize("profile", ["slurm", "slurm-allocation", "pjm"])
def test_a_cluster_profiles_dry_run_prints_no_python_warning_nor_empty_group_headings(tmp_path, testdata, no_slurm_probe,
                                                                                     profile):
    """Snakemake's default disk_mb, computed from input sizes while it plans, warned "coroutine
    ... was never awaited"; a group job's heading came without its (hidden) job lines."""
    config = write_config(tmp_path, testdata)
    result = subprocess.run([SNAKEMAKE, "--profile", f"profiles/{profile}", "--configfile", str(config), "-n"],
                            cwd=RUN_DIR, capture_output=True, text=True, env=no_slurm_probe)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-3000:]
    assert "map_reads" in output  # the plan of a run with every job to do
    assert "RuntimeWarning" not in output and "never awaited" not in output, output[-3000:]
    assert "Group job" not in output, output[-3000:]


def test_a_run_whose_jobs_go_to_a_cluster_with_cluster_local_is_refused_before_any_job(tmp_path, testdata,
                                                                                        no_slurm_probe):
    """A --config on the command line replaces a profile's cluster=...: the plan (threads, tiers)
    is then a local run's, and the executor, known only when the run starts, refuses it."""
    config = write_config(tmp_path, testdata)
    result = subprocess.run([SNAKEMAKE, "--configfile", str(config), "--executor", "cluster-generic",
                             "--cluster-generic-submit-cmd", "false", "--jobs", "1", "--config", "stagger_minutes=0"],
                            cwd=RUN_DIR, capture_output=True, text=True, env=no_slurm_probe)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "config 'cluster' is local but the jobs go to the cluster-generic executor" in output, output[-3000:]
    assert not (tmp_path / "results").exists()


# --- the troubleshooting page (docs/troubleshooting.md) quotes messages that exist


def troubleshooting_messages(readme: str) -> list[str]:
    """The backticked messages in the first column of the tables of the Troubleshooting section."""
    start = readme.index("## Troubleshooting")
    end = readme.find("\n## ", start + 1)
    section = readme[start:end if end != -1 else None]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return [message for row in rows for message in re.findall(r"`([^`]+)`", row.split(" | ")[0])]


def message_sources() -> str:
    """Where the messages come from: this project's code, Snakemake's and jsonschema's (which word
    the config and job errors), and the system's error texts; adjacent string literals joined."""
    roots = [REPO / "src", REPO / "workflow", Path(snakemake.__file__).parent, Path(jsonschema.__file__).parent]
    texts = [path.read_text(errors="replace") for root in roots for path in sorted(root.rglob("*"))
             if path.is_file() and path.suffix in (".py", ".smk", ".sh", "")]
    texts += [os.strerror(code) for code in errno.errorcode]
    return re.sub(r"""(["'])\s*\n\s*[fr]?\1""", "", "\n".join(texts))


def test_troubleshooting_section_quotes_real_messages():
    readme = (REPO / "docs" / "troubleshooting.md").read_text()
    assert "## Troubleshooting" in readme, "docs/troubleshooting.md has no '## Troubleshooting' section"
    messages = troubleshooting_messages(readme)
    assert len(messages) > 30
    sources = message_sources()
    # A message is quoted with `…` for the names, paths and numbers it gives: its fixed parts must occur.
    missing = [(message, part) for message in messages for part in map(str.strip, message.split("…"))
               if len(part) > 3 and part not in sources]
    assert missing == []


@pytest.mark.parametrize("cores, cluster, expected", [
    (2, "local", {"map_reads": 2, "markdup": 1}),
    # The .test cohort: map jobs at map's most (8); 5 x 5 regions = 25 markdup jobs.
    (48, "local", {"map_reads": 8, "markdup": 1}),
    (48, "slurm", {"map_reads": 2, "markdup": 2}),
    (1, "pjm", {"map_reads": 2, "markdup": 2}),
])
def test_the_workflow_gives_its_jobs_the_tables_threads(tmp_path, testdata, cores, cluster, expected):
    """`threads: auto` (rules.Threads) in the parsed workflow: a fixed number per rule (the timeline
    reads them too), from the local run's cores, or the cluster's count whatever the cores."""
    config = write_config(tmp_path, testdata, cluster=cluster, map={"threads": "auto"}, markdup={"threads": "auto"})
    threads = fixed_threads(parse_workflow(config, cores=cores))
    assert {name: threads[name] for name in expected} == expected


def test_map_jobs_go_one_pair_after_another_below_every_other_priority(tmp_path, testdata):
    """Map jobs' priorities: the configured one for the pairs table's first pair (its tumor,
    normal and panel), a fraction less for each next pair and for samples in no pair; a pair's
    samples alike (their map jobs interleave); never down to the next integer (no other rule's
    order changes)."""
    from types import SimpleNamespace

    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("tumor\tnormal\tpanel\ntumor\tnormal\t\npon1\tpon2\t\n")
    config = write_config(tmp_path, testdata, priorities={"map_reads": 5}, pairs=str(pairs), control_panels=None)
    priority = parse_workflow(config).get_rule("map_reads").priority
    value = {sample: priority(SimpleNamespace(sample=sample, chunk="0000"))
             for sample in ("tumor", "normal", "pon1", "pon2", "pon3")}
    assert value["tumor"] == value["normal"] == 5
    assert 5 > value["pon1"] == value["pon2"] > value["pon3"] > 4  # pon3: in no pair
    # The bundled pairs: the pair and its panel's members alike.
    bundled = parse_workflow(write_config(tmp_path / "bundled", testdata, priorities={"map_reads": 5}))
    priority = bundled.get_rule("map_reads").priority
    assert {priority(SimpleNamespace(sample=sample, chunk="0000")) for sample in value} == {5}


def test_every_problem_and_warning_of_a_config_is_reported_in_one_pass(tmp_path, testdata):
    """Problems of different stages of the parse (a database, the SV pairs, pmsignature's genes,
    an option mapping) and the plan's warnings (the panel's EB limit, with the line to write) in
    one refusal."""
    # A malformed option mapping stops the parse first (the config is not read further).
    message = parse_refusal(tmp_path, testdata, mutation_util={"single_params": {"count": 5}})
    assert "'count' is not an option: write it as the tool does, e.g. --count" in message
    message = parse_refusal(tmp_path, testdata, hotspot_db="missing.txt", sv_detection={"tumors": ["nope"]},
                            pmsignature_ind={"enable": True}, pmsignature={"annotation": "hg19"},
                            mutation_util={"pair_params": {"--eb_pval": 4.0}})
    assert message.startswith("genomon-smk: invalid config or input, refused before any job (3 problems;")
    assert "key 'hotspot_db': file not found" in message
    assert "key 'sv_detection.tumors': 'nope': not a tumor of the pairs table" in message
    assert "key 'pmsignature.annotation': hg19 is the refGene table" in message
    warning = message[message.index("and in the same pass:"):]
    eb_pval = re.search(r"The largest --eb_pval this panel passes is ([0-9.]+): add `mutation_util: "
                        r"\{pair_params: \{--eb_pval: ([0-9.]+)\}\}` to ", warning)
    assert eb_pval and eb_pval.group(1) == eb_pval.group(2) and 0 < float(eb_pval.group(1)) < 4, warning


def test_a_missing_interval_list_is_refused_with_its_key_in_the_one_pass(tmp_path, testdata):
    """regions.file (the YAML's, or a dna_genomon.cfg's [REFERENCE] interval_list) naming no file:
    a refusal naming the key and where it was set, with the other problems (not a traceback)."""
    message = parse_refusal(tmp_path / "yaml", testdata, regions={"file": "missing.interval_list"},
                            hotspot_db="missing.txt")
    assert "key 'regions.file': file not found: " in message and "missing.interval_list" in message
    assert "key 'hotspot_db': file not found" in message and "Traceback" not in message
    cfg = tmp_path / "cfg" / "dna_genomon.cfg"
    cfg.parent.mkdir()
    cfg.write_text("[REFERENCE]\ninterval_list = gone.interval_list\n")
    message = parse_refusal(tmp_path / "cfg", testdata, genomon_config=str(cfg), regions=None)
    assert (f"{cfg}:2: [REFERENCE] interval_list (config key 'regions.file'): file not found: "
            f"{cfg.parent / 'gone.interval_list'}") in message


def test_an_options_mapping_with_a_key_lacking_dashes_gets_the_hint_alone(tmp_path, testdata):
    message = parse_refusal(tmp_path, testdata, mutation_util={"pair_params": {"eb_pval": 0.8}})
    assert "'eb_pval' is not an option: write it as the tool does, e.g. --eb_pval" in message
    assert "is not of type" not in message and message.count("mutation_util.pair_params") == 1, message
