"""Each accessor of genomon_smk.plan.snakemake_adapter against the pinned Snakemake: a Workflow
parsed in this process from a small Snakefile (the API the `snakemake` command uses), so that an
upgrade that moves an internal fails here."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
from snakemake.api import SnakemakeApi
from snakemake.resources import Resources
from snakemake.settings.types import (
    ConfigSettings,
    DeploymentMethod,
    DeploymentSettings,
    OutputSettings,
    ResourceSettings,
    StorageSettings,
    WorkflowSettings,
)
from snakemake_interface_executor_plugins.settings import ExecMode
from snakemake_interface_logger_plugins.common import LogEvent

from genomon_smk.plan import snakemake_adapter as adapter
from genomon_smk.plan import snakemake_patches as patches

SNAKEFILE = """
SEEN = {}

def files(wildcards):
    from genomon_smk.plan import snakemake_adapter
    SEEN["dry_run"] = snakemake_adapter.is_dry_run(workflow)
    return []

rule all:
    input: files, "out/a.txt"

rule fixed:
    output: "out/{name}.txt"
    threads: 4
    shell: "touch {output}"

rule per_job:
    output: "other/{name}.txt"
    threads: lambda wildcards: 2
    shell: "touch {output}"
"""


@pytest.fixture
def parsed(tmp_path):
    """parsed(**settings) -> (the Workflow, its SEEN dict, the API), from a Snakefile and a
    config file in tmp_path."""
    snakefile = tmp_path / "Snakefile"
    configfile = tmp_path / "config.yaml"
    configfile.write_text("{}\n")
    cwd = os.getcwd()
    apis = []

    def parse(output=None, text=SNAKEFILE, **settings):
        snakefile.write_text(text)
        api = SnakemakeApi(output or OutputSettings())
        api.__enter__()
        apis.append(api)
        workflow_api = api.workflow(
            resource_settings=settings.pop("resource_settings", ResourceSettings(cores=2)),
            config_settings=ConfigSettings(configfiles=[configfile]),
            storage_settings=StorageSettings(),
            snakefile=snakefile,
            workdir=tmp_path,
            **settings,
        )
        workflow = workflow_api._workflow
        return workflow, workflow.globals["SEEN"], workflow_api

    yield parse
    for api in apis:
        api.__exit__(None, None, None)
    os.chdir(cwd)


def test_process_roles(parsed):
    workflow, _, _ = parsed()
    assert adapter.is_main_process(workflow) and not adapter.is_job_process(workflow)
    for mode in (ExecMode.REMOTE, ExecMode.SUBPROCESS):
        workflow, _, _ = parsed(workflow_settings=WorkflowSettings(exec_mode=mode))
        assert not adapter.is_main_process(workflow) and adapter.is_job_process(workflow)


def test_config_files(parsed, tmp_path):
    workflow, _, _ = parsed()
    assert [Path(path).resolve() for path in adapter.config_files(workflow)] == [tmp_path / "config.yaml"]


def test_uses_conda(parsed):
    assert not adapter.uses_conda(parsed()[0])
    workflow, _, _ = parsed(deployment_settings=DeploymentSettings(deployment_method={DeploymentMethod.CONDA}))
    assert adapter.uses_conda(workflow)


def test_a_cluster_executor_with_a_local_cluster_key_is_a_problem():
    assert "add cluster=slurm to your --config" in adapter.cluster_mismatch("local", "slurm")
    assert "add cluster=slurm-allocation or pjm-allocation" in adapter.cluster_mismatch("local", "cluster-generic")
    assert adapter.cluster_mismatch("slurm", "slurm") is None
    assert adapter.cluster_mismatch("local", "local") is None and adapter.cluster_mismatch("local", None) is None


def test_default_resource_args_and_cluster_kind(parsed):
    workflow, _, _ = parsed()
    assert adapter.default_resource_args(workflow) == []
    assert adapter.cluster_kind(None, workflow) == "local"
    assert adapter.cluster_kind("slurm", workflow) == "slurm"
    # As the command line (and a profile's default-resources) gives them.
    parse = Resources.parser_factory(defaults="full", allow_expressions=True)
    pjm = ResourceSettings(cores=2, default_resources=parse(["runtime=60", "pjm_rscgrp='small'"]))
    workflow, _, _ = parsed(resource_settings=pjm)
    assert "pjm_rscgrp='small'" in adapter.default_resource_args(workflow)
    assert adapter.cluster_kind(None, workflow) == "pjm"  # a profile from before the key
    assert adapter.cluster_kind("pjm-allocation", workflow) == "pjm-allocation"


def test_total_cores_and_fixed_threads(parsed):
    workflow, _, _ = parsed(resource_settings=ResourceSettings(cores=3))
    assert adapter.total_cores(workflow) == 3
    threads = adapter.fixed_threads(workflow)
    assert threads["fixed"] == 4
    assert threads["per_job"] is None  # known per job only
    assert set(threads) == {"all", "fixed", "per_job"}


def test_local_cores(parsed):
    """The run's cores where this machine runs the jobs (the main process, a local job's
    subprocess, which Snakemake gives the run's --cores); none in a cluster job's process."""
    for mode in (ExecMode.DEFAULT, ExecMode.SUBPROCESS):
        workflow, _, _ = parsed(resource_settings=ResourceSettings(cores=3), workflow_settings=WorkflowSettings(exec_mode=mode))
        assert workflow.local_exec and adapter.local_cores(workflow) == 3
    workflow, _, _ = parsed(resource_settings=ResourceSettings(cores=3), workflow_settings=WorkflowSettings(exec_mode=ExecMode.REMOTE))
    assert adapter.local_cores(workflow) is None


def test_wrap_unlock(parsed):
    workflow, _, _ = parsed()
    original = workflow.unlock
    seen = []

    def wrapper(unlock):
        seen.append(unlock)
        return lambda: "ours"

    adapter.wrap_unlock(workflow, wrapper)
    assert seen == [original] and workflow.unlock() == "ours"


def test_dry_run_seen_when_jobs_are_planned(parsed):
    workflow, seen, workflow_api = parsed()
    assert not adapter.is_dry_run(workflow)  # while the Snakefile is parsed
    workflow_api.dag().execute_workflow(executor="dryrun")
    assert seen["dry_run"] is True


def test_logger():
    import snakemake.logging

    assert adapter.snakemake_logger() is logging.getLogger(snakemake.logging.logger.name)


def test_jobs_rerun_for_a_changed_param(parsed, tmp_path):
    """A job whose param changed since its output was made (Snakemake's params trigger) is found
    by that param; a job rerun for another reason is not."""
    text = """
rule all:
    input: "out/a.txt", "out/b.txt"

rule one:
    output: "out/{name}.txt"
    params: held=lambda wildcards: (tmp_path / f"{wildcards.name}.held").read_text()
    shell: "echo {params.held} >{output}"
""".replace("tmp_path", f"__import__('pathlib').Path({str(tmp_path)!r})")
    for name in "ab":
        (tmp_path / f"{name}.held").write_text("v1")
    workflow, _, workflow_api = parsed(text=text)
    assert adapter.jobs_rerun_for_param(workflow, "held") == []  # no DAG yet
    workflow_api.dag().execute_workflow(executor="local")
    (tmp_path / "a.held").write_text("v2")
    workflow, _, workflow_api = parsed(text=text)
    workflow_api.dag().execute_workflow(executor="dryrun")
    assert adapter.jobs_rerun_for_param(workflow, "held") == [{"name": "a"}]
    assert adapter.jobs_rerun_for_param(workflow, "other") == []


class Records(logging.Handler):
    def __init__(self, level=logging.NOTSET):
        super().__init__(level)
        self.events = []

    def emit(self, record):
        self.events.append(getattr(record, "event", None))


def dry_run_with_handler(workflow_api, handler: logging.Handler) -> None:
    """A dry run of the parsed workflow with `handler` on Snakemake's logger."""
    adapter.snakemake_logger().addHandler(handler)
    try:
        workflow_api.dag().execute_workflow(executor="dryrun")
    finally:
        adapter.snakemake_logger().removeHandler(handler)


@pytest.mark.parametrize("printshellcmds", [False, True])
def test_plan_faster(parsed, printshellcmds):
    """A dry run plans the same jobs and logs every job's record (a logger plugin sees them all).
    Rule functions' parameters are looked up once."""
    import snakemake.common
    import snakemake.jobs
    import snakemake.rules

    patches.plan_faster()
    patches.plan_faster()  # idempotent
    for module in (snakemake.common, snakemake.rules, snakemake.jobs):
        assert module.get_function_params(test_plan_faster) is module.get_function_params(test_plan_faster)
        assert not hasattr(module.get_function_params.uncached, "uncached")
    workflow, _, workflow_api = parsed(OutputSettings(printshellcmds=printshellcmds))
    records = Records()
    dry_run_with_handler(workflow_api, records)
    assert records.events.count(LogEvent.JOB_INFO) == 2  # all, fixed
    import snakemake.scheduling.job_scheduler as job_scheduler

    assert hasattr(job_scheduler.JobScheduler._free_resources, "full")  # skipped in a dry run
    assert LogEvent.RUN_INFO in records.events  # the Job stats
    assert {job.rule.name for job in workflow.dag.jobs} == {"all", "fixed"}


def test_plan_faster_formats_a_shell_command_once_per_record(parsed, monkeypatch):
    """A job's record (JOB_INFO and SHELLCMD) carries the shell command Snakemake formats, formatted
    once; outside a record every read formats it."""
    import snakemake.jobs

    patches.plan_faster()
    assert not hasattr(snakemake.jobs.Job.log_info.full.full, "full")  # wrapped once each
    full = snakemake.jobs.Job.shellcmd.fget.full
    format_wildcards = snakemake.jobs.Job.format_wildcards
    formatted = []

    def counted(job, string, **variables):
        if string == job.rule.shellcmd:
            formatted.append(job)
        return format_wildcards(job, string, **variables)

    monkeypatch.setattr(snakemake.jobs.Job, "format_wildcards", counted)
    workflow, _, workflow_api = parsed(OutputSettings(printshellcmds=True))
    records = []

    class Shellcmds(logging.Handler):
        def emit(self, record):
            if getattr(record, "event", None) in (LogEvent.JOB_INFO, LogEvent.SHELLCMD):
                records.append((record.event, record.shellcmd, record.getMessage()))

    dry_run_with_handler(workflow_api, Shellcmds())
    fixed = next(job for job in workflow.dag.jobs if job.rule.name == "fixed")
    shellcmds = [shellcmd for _, shellcmd, _ in records]
    assert "touch out/a.txt" in shellcmds and shellcmds.count("touch out/a.txt") == 2  # JOB_INFO, SHELLCMD
    assert (LogEvent.SHELLCMD, "touch out/a.txt", "Shell command: touch out/a.txt") in records
    assert formatted.count(fixed) == 1  # three reads in one record
    assert fixed.shellcmd == "touch out/a.txt" and formatted.count(fixed) == 2  # not in a record: formatted
    assert full(fixed) == "touch out/a.txt" and formatted.count(fixed) == 3


def test_plan_faster_answers_is_flagged_at_once_for_plain_paths():
    """The same answer as Snakemake's is_flagged, for every kind of file, in every module that
    imported it."""
    import snakemake.dag
    import snakemake.io
    import snakemake.jobs
    from snakemake.io import IOFile, temp

    patches.plan_faster()
    quick = snakemake.io.is_flagged
    assert quick is snakemake.dag.is_flagged is snakemake.jobs.is_flagged and hasattr(quick, "full")
    plain_path = IOFile("out/a.txt")
    plain_path._file = "out/a.txt"  # as plan_smaller leaves an unflagged file
    files = ["out/a.txt", IOFile("out/a.txt"), plain_path, temp("out/b.txt"), IOFile(temp("out/b.txt")),
             snakemake.io.directory("out/d"), IOFile(IOFile(temp("out/c.txt"))), IOFile(lambda wildcards: "x")]
    for file in files:
        for flag in ("temp", "directory", "storage_object", "pipe"):
            assert quick(file, flag) is quick.full(file, flag), (file, flag)
    assert quick(IOFile(temp("out/b.txt")), "temp") is True


def test_plan_faster_applies_wildcards_as_snakemake_does():
    """The same text as Snakemake's apply_wildcards for every kind of pattern, in every module
    that imported it, and the same error for a wildcard the values lack."""
    import snakemake.io
    import snakemake.rules
    from snakemake.exceptions import WildcardError
    from snakemake.io import AnnotatedString, temp

    patches.plan_faster()
    quick = snakemake.io.apply_wildcards
    assert quick is snakemake.rules.apply_wildcards and hasattr(quick, "full")
    values = {"sample": "tumor", "region": "chr1_1", "n": 3, "a.b": "dotted"}
    flagged = AnnotatedString("out/{sample}.txt")
    flagged.flags["temp"] = True
    patterns = ["out/a.txt", "", "out/{sample}/{region}.bam", "{sample}", "x{sample}{region}y",
                "out/{sample,[a-z]+}/{n, \\d{1,3}}.txt", "{ sample }/{a.b}", "{{sample}}", "a}b{",
                flagged, temp("map/{sample}"), "out/{sample}.txt"]
    for _ in range(2):  # found, then remembered
        for pattern in patterns:
            assert quick(pattern, values) == quick.full(pattern, values), pattern
            assert type(quick(pattern, values)) is str
    with pytest.raises(WildcardError, match="'chunk'"):
        quick("out/{chunk}.txt", values)
    with pytest.raises(WildcardError, match="'chunk'"):
        quick.full("out/{chunk}.txt", values)


def test_common_prefix_by_halves_is_snakemakes():
    import random

    from snakemake.common.prefix_lookup import PrefixLookup

    patches.plan_faster()
    quick = PrefixLookup._common_prefix
    assert hasattr(quick, "full")
    lookup = PrefixLookup([])
    rng = random.Random(7)
    pairs = [("abc", "abc"), ("ab", "abc"), ("abc", "ab"), ("a", "b"), ("/x/y/z", "/x/q"), ("a", "a")]
    for _ in range(2000):
        base = "".join(rng.choice("ab/") for _ in range(rng.randint(1, 12)))
        pairs.append((base + "".join(rng.choice("ab") for _ in range(rng.randint(0, 4))),
                      base[: rng.randint(1, len(base))] + "".join(rng.choice("ab") for _ in range(rng.randint(0, 4)))))
    for first, second in pairs:
        assert quick(lookup, first, second) == quick.full(lookup, first, second), (first, second)


def test_clean_paths_pass_warns_as_snakemake_does(monkeypatch):
    """_IOFile.check patched: the same warnings for every path (none for a clean one)."""
    import snakemake.io
    from snakemake.io import IOFile, temp

    patches.plan_faster()
    check = snakemake.io._IOFile.check
    assert hasattr(check, "full")
    warnings = []
    monkeypatch.setattr(snakemake.io.logger, "warning", warnings.append)
    paths = ["out/a.txt", "/abs/b.bam", temp("out/t.txt"), "./a", " a", "a ", "a//b", "a\nb", "out/{x-y}.txt",
             "s3://bucket/k", ""]
    for path in paths:
        file = IOFile(path)
        check(file)
        quick = list(warnings)
        warnings.clear()
        check.full(file)
        assert quick == warnings, path
        assert bool(warnings) == (path in ("./a", " a", "a ", "a//b", "a\nb", "")), path
        warnings.clear()


def test_path_parts_are_pathlibs():
    for path in ["a/b", "/a//b/./c", "//x/y", "///x", "a/../b", "./", "/", ".", "a/b/", "x/.h/./"]:
        assert patches.path_parts(path, os.getcwd()) == Path(path).absolute().parts, path


CHILD = """
rule all:
    input: "out/d", "out/d/inner.txt"

rule directory_output:
    output: directory("out/d")
    shell: "mkdir -p {output}"

rule inside:
    output: "out/d/inner.txt"
    shell: "touch {output}"
"""


def test_plan_faster_refuses_an_output_inside_another_jobs_directory(parsed):
    """DAG.check_directory_outputs patched: the same ChildIOException, naming both paths."""
    from snakemake.exceptions import ChildIOException

    patches.plan_faster()
    workflow, _, workflow_api = parsed(text=CHILD)
    with pytest.raises(ChildIOException) as refused:
        workflow_api.dag().execute_workflow(executor="dryrun")
    message = str(refused.value)
    assert hasattr(type(workflow.dag).check_directory_outputs, "full")
    assert str(Path("out/d").absolute()) in message and str(Path("out/d/inner.txt").absolute()) in message
    with pytest.raises(ChildIOException) as unpatched:
        type(workflow.dag).check_directory_outputs.full(workflow.dag)
    assert str(unpatched.value) == message


THREE = """
SEEN = {}
rule all:
    input: expand("out/{name}.txt", name=["a", "b", "c"])

rule fixed:
    output: "out/{name}.txt"
    shell: "touch {output}"
"""


@pytest.mark.parametrize(("quiet", "handler", "built"), [(True, None, 2), (False, None, 4), (True, "plugin", 4)])
def test_plan_faster_builds_no_record_that_no_handler_shows(parsed, monkeypatch, quiet, handler, built):
    """In a dry run with --quiet rules the first job of each rule gets its record (a rule's
    error still stops the dry run), the others none; with the records shown, or a handler that
    may read them (a logger plugin's), every job's."""
    import snakemake.jobs
    from snakemake.settings.enums import Quietness

    patches.plan_faster()
    installed = snakemake.jobs.Job.log_info
    records = []

    def counted(job, *args, **kwargs):
        records.append(job.rule.name)
        return installed.full(job, *args, **kwargs)

    monkeypatch.setattr(snakemake.jobs.Job, "log_info", patches.unseen_records_skipped(counted))
    monkeypatch.setattr(adapter.snakemake_logger(), "propagate", False)  # pytest's capture on the root logger reads all
    output = OutputSettings(quiet={Quietness.RULES} if quiet else None)
    workflow, _, workflow_api = parsed(output, text=THREE)
    if handler:
        dry_run_with_handler(workflow_api, Records())
    else:
        workflow_api.dag().execute_workflow(executor="dryrun")
    assert len(records) == built and set(records) == {"all", "fixed"}
    assert len(workflow.dag.jobs) == 4


class ShowsNoRecords(logging.Handler):
    shows_job_records = False

    def emit(self, record):
        raise AssertionError("not asked")


@pytest.mark.parametrize(
    ("handlers", "shown"),
    [
        (["default"], True),
        (["quiet"], False),
        (["quiet", "plugin"], True),
        (["quiet", "plugin at ERROR"], False),
        (["quiet", "says no"], False),
        (["quiet", "queued says no"], False),
        (["quiet", "queued plugin"], True),
    ],
)
def test_records_shown_asks_every_handler(handlers, shown):
    """A job's record is shown when a handler's filters pass it (Snakemake's handlers), when a
    handler may read it (any other at INFO), unless a handler says it shows none."""
    import logging.handlers
    import queue
    from types import SimpleNamespace

    from snakemake.logging import ColorizingTextHandler, DefaultFilter
    from snakemake.settings.enums import Quietness

    logger = logging.Logger("genomon-smk-test-records")  # no parent: nothing of pytest's
    listener = SimpleNamespace(handlers=[])
    for name in handlers:
        if name in ("default", "quiet"):
            handler = ColorizingTextHandler(nocolor=True)
            handler.addFilter(DefaultFilter({Quietness.RULES} if name == "quiet" else None, False, False, True, False))
        elif name.startswith("plugin"):
            handler = Records(logging.ERROR if name.endswith("ERROR") else logging.NOTSET)
        elif name == "says no":
            handler = ShowsNoRecords()
        else:
            listener.handlers.append(ShowsNoRecords() if name.endswith("says no") else Records())
            handler = logging.handlers.QueueHandler(queue.Queue())
        logger.addHandler(handler)
    manager = SimpleNamespace(logger=logger, queue_listener=listener)
    assert patches.records_shown(manager) is shown


def test_plan_faster_keeps_every_jobs_conda_env(parsed, tmp_path):
    """The rule's cached conda env spec, without the job's params: the same spec as before."""
    import snakemake.jobs

    (tmp_path / "env.yaml").write_text("channels: [conda-forge]\ndependencies: [python]\n")
    patches.plan_faster()
    workflow, _, workflow_api = parsed(text=SNAKEFILE.replace("threads: 4", 'threads: 4\n    conda: "env.yaml"'))
    workflow_api.dag().execute_workflow(executor="dryrun")
    jobs = {job.rule.name: job for job in workflow.dag.jobs}
    full = snakemake.jobs.Job.conda_env_spec.fget.full
    for job in jobs.values():
        assert job.conda_env_spec == full(job)
    assert str(jobs["fixed"].conda_env_spec.file.get_path_or_uri(secret_free=True)).endswith("env.yaml")
    assert jobs["all"].conda_env_spec is None


SMALLER = """
SEEN = {}
rule all:
    input: "out/c.txt"

rule first:
    output: kept="out/a.txt", scratch=temp("out/a.tmp"), spare=temp("out/b.tmp")
    log: "logs/first.log"
    benchmark: "bench/first.tsv"
    shell: "echo a >{output.kept}; echo t >{output.scratch}; touch {output.spare}; : >{log}"

rule second:
    input: index="out/a.txt", scratch="out/a.tmp", given=lambda wildcards: ["out/a.txt"]
    output: protected("out/c.txt")
    shell: "cat {input.index} {input.scratch} >{output}"
"""


@pytest.mark.parametrize("executor", ["dryrun", "local"])
def test_plan_smaller(parsed, tmp_path, executor):
    """Jobs keep plain paths for unflagged files, shared Namedlist guards and shared empty file
    sets; flags, names, guards and a real run (temp removed, protected kept, nothing left to
    do on the second run) work as before."""
    import snakemake.iocontainers
    from snakemake.io import AnnotatedString, is_flagged

    patches.plan_faster()  # as applied: a dry run then evaluates no resources after a job's record
    patches.plan_smaller()
    patches.plan_smaller()  # idempotent
    assert not hasattr(snakemake.iocontainers.Namedlist.__init__.full, "full")
    workflow, _, workflow_api = parsed(text=SMALLER)
    workflow_api.dag().execute_workflow(executor=executor)
    jobs = {job.rule.name: job for job in workflow.dag.jobs}
    first, second = jobs["first"], jobs["second"]
    # A dry run drops what only a job's record read (made again, the same, when read): not a run.
    made = ("_log", "_benchmark", "_params", "_resources", "_output_by_path")
    assert all(getattr(first, name) is None for name in made) == (executor == "dryrun")
    assert type(first.output.kept._file) is str and type(first.log[0]._file) is str
    assert type(first.benchmark._file) is str and type(second.input.index._file) is str
    assert type(second.input.given[0]._file) is str  # a function's path: its text, not a file of a file
    assert type(first.output.scratch._file) is AnnotatedString and is_flagged(first.output.scratch, "temp")
    assert first.temp_output == {first.output.scratch, first.output.spare} and first.output.scratch == "out/a.tmp"
    assert first.output.scratch.flags is first.output.spare.flags == {"temp": True}  # one shared dict
    assert second.protected_output == {second.output[0]}
    assert first.protected_output is first.touch_output is second.temp_output == frozenset()
    assert second.input.index == "out/a.txt"  # a name given to an item replaces its guard
    assert first.output.sort is second.input.sort
    with pytest.raises(AttributeError, match="sort"):
        first.output.sort()
    assert first.output._allowed_overrides is second.wildcards._allowed_overrides
    assert hasattr(type(workflow.dag).update_needrun, "full")  # the output times taken in turn
    reason = workflow.dag.reason(second)
    assert reason._updated_input is None and reason.updated_input == set()  # dropped when empty, made again
    assert reason.updated_input_run == {second.input.index, second.input.scratch} or executor == "local"
    assert second.input.given == ["out/a.txt"] and second.input.given[0] == second.input.index
    dag = workflow.dag
    if executor == "dryrun":  # one file set per edge, both ways
        assert dag.depending[first][second] is dag._dependencies[second][first] == {"out/a.txt", "out/a.tmp"}
    assert dag.depending[first][second] == dag._dependencies[second][first]
    assert first.log == ["logs/first.log"] and first.benchmark == "bench/first.tsv" and not first.params
    assert first.resources._cores == 1 and first.output_by_path["out/a.tmp"] is first.output.scratch
    if executor == "local":
        assert (tmp_path / "out/c.txt").read_text() == "a\nt\n"
        assert not (tmp_path / "out/a.tmp").exists() and (tmp_path / "bench/first.tsv").exists()
        assert not (tmp_path / "out/b.tmp").exists()  # temp, needed by no job
        _, _, again = parsed(text=SMALLER)
        again.dag().execute_workflow(executor="dryrun")
        assert not len(again._workflow.dag)  # nothing left to do


SHARED = """
SEEN = {}
rule all:
    input: expand("out/{name}.txt", name=["x", "y"])

rule reference:
    output: "ref.txt"
    shell: "echo r >{output}"

rule use:
    input: ref=rules.reference.output[0], listed=lambda wildcards: ["ref.txt"]
    output: "out/{name}.txt"
    shell: "cat {input.ref} {input.listed} >{output}"
"""


@pytest.mark.parametrize("executor", ["dryrun", "local"])
def test_plan_smaller_shares_a_rules_input_files_in_a_dry_run(parsed, tmp_path, executor):
    """In a dry run the jobs of a rule share their equal input files (in the list and its names)
    and their edges' file sets; a run keeps its own, and runs."""
    patches.plan_faster()
    patches.plan_smaller()
    workflow, _, workflow_api = parsed(text=SHARED)
    workflow_api.dag().execute_workflow(executor=executor)
    dag = workflow.dag
    jobs = {(job.rule.name, job.wildcards_dict.get("name")): job for job in dag.jobs}
    x, y, reference = jobs["use", "x"], jobs["use", "y"], jobs["reference", None]
    assert x.input == y.input == ["ref.txt", "ref.txt"] and x.input.listed == ["ref.txt"]
    assert not patches.EDGE_FILES and not patches.INPUT_FILES  # emptied once the DAG is built
    shared = executor == "dryrun"
    assert (x.input.ref is y.input.ref is y.input[0] is y.input.listed[0]) == shared
    assert dag._dependencies[x][reference] == {"ref.txt"} == dag.depending[reference][x]
    assert (dag._dependencies[x][reference] is dag._dependencies[y][reference] is dag.depending[reference][y]) == shared
    if executor == "local":
        assert (tmp_path / "out/y.txt").read_text() == "r\nr\n"


def test_tasks_in_turn():
    """A TaskGroup's coroutines run one after the other; a failure closes the rest and raises an
    ExceptionGroup, as asyncio.TaskGroup does."""
    import asyncio

    order = []

    async def step(name, fail=False):
        await asyncio.sleep(0)
        if fail:
            raise ValueError(name)
        order.append(name)

    async def run(*steps):
        async with patches.TasksInTurn() as group:
            for name, fail in steps:
                group.create_task(step(name, fail))

    asyncio.run(run(("a", False), ("b", False)))
    assert order == ["a", "b"]
    with pytest.raises(ExceptionGroup) as raised:
        asyncio.run(run(("c", True), ("d", False)))
    assert [str(error) for error in raised.value.exceptions] == ["c"] and order == ["a", "b"]


@pytest.mark.parametrize("cluster", ["pjm", "slurm", None])
def test_the_pjm_storage_warning_follows_config_cluster(tmp_path, testdata, capfd, cluster):
    """The profile says where jobs run (config `cluster`): PJM jobs whose config overrides the
    PJM storage settings (profiles/pjm/storage.yaml, under the config) are warned about, other
    clusters are not; nothing is sniffed from resources."""
    from conftest import parse_workflow, write_config

    parse_workflow(write_config(tmp_path, testdata, cluster=cluster, storage={"reference_staging": "copy"}))
    warned = "WARNING: PJM jobs, but storage.reference_staging is not llio_transfer" in capfd.readouterr().err
    assert warned is (cluster == "pjm")


def test_job_attempt_and_wrap_resources(parsed, tmp_path):
    """A rule's resource replaced by a function of the attempt, which sees the rule's own value
    and the job's log; rules without a log are left as they are."""
    from snakemake.iocontainers import Wildcards

    text = SNAKEFILE + """
rule logged:
    output: "logged/{name}.txt"
    log: "logs/{name}.log"
    resources: mem_mb=100
    shell: "touch {output}"
"""
    workflow, _, _ = parsed(text=text)
    assert adapter.job_attempt(workflow) == 1
    seen = []

    def wrap(name, value, log_of):
        def grown(wildcards, input, attempt, threads, rulename, async_run):
            seen.append((name, log_of(wildcards)))
            return value(wildcards, input, attempt, threads, rulename, async_run) * attempt

        return grown

    adapter.wrap_resources(workflow, ("mem_mb",), wrap)
    resource = workflow.get_rule("logged").resources["mem_mb"]
    wildcards = Wildcards(fromdict={"name": "a"})
    value = resource.evaluate(wildcards, input=[], attempt=3, threads=1, rulename="logged", async_run=None).value
    assert value == 300 and seen == [("mem_mb", "logs/a.log")]
    assert "mem_mb" not in workflow.get_rule("fixed").resources.keys()  # no log, no own mem_mb: left alone
    # Only the rules of Snakefiles below `under` (as a module: the workflow's own, not the host's).
    elsewhere, _, _ = parsed(text=text)
    adapter.wrap_resources(elsewhere, ("mem_mb",), wrap, under=tmp_path / "workflow")
    assert elsewhere.get_rule("logged").resources["mem_mb"].value == 100
    adapter.wrap_resources(elsewhere, ("mem_mb",), wrap, under=tmp_path)
    assert elsewhere.get_rule("logged").resources["mem_mb"].is_evaluable()


def test_workflow_dir_module_and_hooks(parsed, tmp_path):
    """The parsed Snakefile's own directory and whether it is a module of another; hooks added
    run after the ones registered before."""
    text = SNAKEFILE + (
        "from genomon_smk.plan import snakemake_adapter\n"
        "SEEN['place'] = (snakemake_adapter.workflow_dir(workflow), snakemake_adapter.workflow_source(workflow),"
        " snakemake_adapter.is_module(workflow))\n"
    )
    workflow, seen, _ = parsed(text=text)
    assert seen["place"] == (tmp_path, str(tmp_path), False)
    ran = []
    workflow._onstart = lambda log: ran.append(("theirs", log))
    adapter.add_hooks(workflow, onstart=lambda: ran.append("ours"))
    workflow._onstart("log.txt")
    assert ran == [("theirs", "log.txt"), "ours"]
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "Snakefile").write_text(
        "from pathlib import Path\nfrom genomon_smk.plan import snakemake_adapter\n"
        "Path('seen.txt').write_text(f'{snakemake_adapter.is_module(workflow)} {snakemake_adapter.workflow_dir(workflow)}')\n"
        "rule sub_rule:\n    output: 'sub.txt'\n    shell: 'touch {output}'\n")
    parsed(text='module m:\n    snakefile: "sub/Snakefile"\n\nuse rule * from m as m_*\n')
    assert (tmp_path / "seen.txt").read_text() == f"True {sub}"


def test_end_promptly_cancels_the_schedulers_timers_only():
    """The scheduler's wake-up timer (threading.Timer started from its module, the pinned
    Snakemake's) is cancelled; another module's timer runs on."""
    import gc
    import inspect
    import threading

    import snakemake.scheduling.job_scheduler as job_scheduler

    assert job_scheduler.__name__ == adapter.SCHEDULER_MODULE
    assert "threading.Timer(" in inspect.getsource(job_scheduler.JobScheduler._schedule_reevalutation)
    fired = []
    namespace = {"__name__": adapter.SCHEDULER_MODULE, "fired": fired}
    exec("def wake():\n    fired.append('scheduler')\n", namespace)
    scheduler_timer = threading.Timer(30, namespace["wake"])
    other_timer = threading.Timer(30, lambda: fired.append("other"))
    for timer in (scheduler_timer, other_timer):
        timer.start()
    try:
        adapter.end_promptly()
        scheduler_timer.join(5)
        assert not scheduler_timer.is_alive() and other_timer.is_alive()
        assert gc.get_freeze_count() > 0
    finally:
        other_timer.cancel()
        gc.unfreeze()
    assert fired == []
