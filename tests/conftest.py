"""Shared fixtures: the .test data set and one pipeline run on it, made once per test run (shared
by the pytest-xdist workers); the order and grouping in which the workers take the tests."""

import atexit
import fcntl
import functools
import hashlib
import inspect
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml

# One BLAS thread in the tests and every process they start (Snakemake, its jobs: EBFilter,
# GenomonSV, MultiQC): OpenBLAS's own threads, one per core, spin against the other workers' and
# jobs' processes on the two cores (the EBFilter fit tests took 3 times the CPU and 4 times the
# time with them on a busy machine). Set before anything imports numpy; a value given is kept.
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).parent / "snakemake")


def checkout_view() -> Path:
    """Where the tests run Snakemake, as a user does, from the checkout: the checkout itself, or
    under pytest-xdist a directory per worker of links to the checkout's entries, so that each
    worker's runs keep their own .snakemake/ (Snakemake's lock files there are not safe for runs
    that start and end at the same moment: one found its locks directory removed under it)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker:
        return REPO
    view = Path(tempfile.mkdtemp(prefix=f"genomon-smk-tests-{worker}-"))
    for entry in REPO.iterdir():
        if entry.name != ".snakemake":
            (view / entry.name).symlink_to(entry)
    atexit.register(shutil.rmtree, view, ignore_errors=True)
    return view


RUN_DIR = checkout_view()


# --- the two lanes: `bin/test` runs every test, `bin/test --fast` those not marked `slow`

# A test is marked `slow` here, so that nobody has to remember it: when it has one of SLOW_MARKS,
# is in SLOW_TESTS, or starts Snakemake: its source, or that of a fixture it uses or of a function
# of the same module that either calls (recursively), names a way to start it (STARTS_SNAKEMAKE).
# The pipeline-run fixtures (pipeline_run, pair_run) start it, so every test that uses them is
# slow. `@pytest.mark.fast` keeps a test in the fast lane whatever it starts (the lint's
# `snakemake --lint`). A test that is not slow and still starts a Snakemake process fails
# (snakemake_only_in_slow_tests): the detection missed it, mark it `workflow`.
SLOW_MARKS = ("workflow", "slurm", "pjm", "slow")
STARTS_SNAKEMAKE = re.compile(
    r"\b(SNAKEMAKE|SNAKEMAKE_MODULE|run_snakemake|run_scenario|start_interruptible|run_interruptible)\b"
    r"|[\"'/]snakemake[\"' ]"
)
# Slow for what they compute, not for Snakemake (the fast lane is the unit tests and the lint).
SLOW_TESTS = {
    "tests/test_testdata.py",  # runs the test-data generator several times (about 20 s)
    "tests/test_bai_merge.py",  # maps and indexes BAMs with samtools and biobambam (about 55 s)
    "tests/test_scatter.py",  # on the pipeline run's chunks (pipeline_run)
}


@functools.cache
def source_of(function) -> str:
    try:
        return inspect.getsource(function)
    except (OSError, TypeError):
        return ""


@functools.cache
def starts_snakemake(function) -> bool:
    """Whether function, or a function of its module that it calls (recursively), names a way to
    start Snakemake."""
    seen, todo = set(), [function]
    while todo:
        current = todo.pop()
        if current in seen or current is snakemake_only_in_slow_tests_function():
            continue
        seen.add(current)
        source = source_of(current)
        if STARTS_SNAKEMAKE.search(source):
            return True
        module = sys.modules.get(current.__module__)
        todo += [called for name in set(re.findall(r"\b(\w+)\(", source))
                 if inspect.isfunction(called := getattr(module, name, None))]
    return False


def snakemake_only_in_slow_tests_function():
    """The guard fixture's own function (it names Snakemake to catch it)."""
    return getattr(snakemake_only_in_slow_tests, "__wrapped__", snakemake_only_in_slow_tests)


def is_slow(item) -> bool:
    if item.get_closest_marker("fast"):
        return False
    if any(item.get_closest_marker(mark) for mark in SLOW_MARKS):
        return True
    if item.nodeid.split("::")[0] in SLOW_TESTS or item.nodeid.split("[")[0] in SLOW_TESTS:
        return True
    functions = [getattr(item, "function", None)] + [
        definitions[-1].func for definitions in item._fixtureinfo.name2fixturedefs.values() if definitions
    ]
    return any(function is not None and starts_snakemake(function) for function in functions)


def command_starts_snakemake(args) -> bool:
    if isinstance(args, (str, bytes, os.PathLike)):
        return bool(re.search(r"(^|[\s/])snakemake(\s|$)", os.fsdecode(args)))
    words = [os.fsdecode(word) if isinstance(word, (str, bytes, os.PathLike)) else "" for word in args]
    return any(os.path.basename(word) == "snakemake" for word in words) or any(
        pair == ["-m", "snakemake"] for pair in map(list, zip(words, words[1:])))


@pytest.fixture(autouse=True)
def snakemake_only_in_slow_tests(request, monkeypatch):
    """A test that the fast lane runs may not start a Snakemake process."""
    if request.node.get_closest_marker("slow") or request.node.get_closest_marker("fast"):
        return

    class Popen(subprocess.Popen):
        def __init__(self, args, *rest, **options):
            if command_starts_snakemake(args):
                pytest.fail(f"{request.node.nodeid} starts Snakemake ({args!r}) but is in the fast lane: "
                            "mark it @pytest.mark.workflow (tests/conftest.py, the two lanes)", pytrace=False)
            super().__init__(args, *rest, **options)

    monkeypatch.setattr(subprocess, "Popen", Popen)


# --- how the pytest-xdist workers share the work (bin/test: `pytest -n 4 --dist loadscope`: a
# module is one unit, so its module-scoped fixtures are made once and one worker has the Slurm)

# The modules that take longest, longest first (--durations of the whole suite, 2026-11-27), so
# that none of them starts last while the other workers run out of work; the cluster modules
# mostly wait for their schedulers, so they start first, beside the tests that compute (the
# scenarios, which make the default run that the cluster tests compare with at their end). The
# modules not named here follow: those with WORKER_ORDER's marks first, in that order, then the
# rest in collection order.
UNIT_ORDER = (
    "test_slurm.py", "test_pjm_workflow.py", "test_scenarios.py", "test_install_user.py", "test_scenarios_normals.py",
    "test_pjm_allocation.py", "test_faults.py", "test_cohort_scale.py", "test_other_snakemake.py", "test_isolation.py", "test_mutation_workflow.py", "test_pjm_emulator.py", "test_sv.py", "test_setup_build.py",
    "test_bai_merge.py", "test_priorities.py", "test_panel_power.py", "test_scatter.py", "test_genomon_sheet.py",
)
WORKER_ORDER = ("slurm", "pjm", "workflow")


def pytest_collection_modifyitems(items):
    """Every slow test marked `slow` (the lanes, above); the modules in UNIT_ORDER's order, then
    those with WORKER_ORDER's marks."""
    for item in items:
        if is_slow(item):
            item.add_marker(pytest.mark.slow)

    def rank(item):
        module = item.nodeid.split("::")[0].rsplit("/", 1)[-1]
        if module in UNIT_ORDER:
            return UNIT_ORDER.index(module)
        marks = (i for i, mark in enumerate(WORKER_ORDER) if item.get_closest_marker(mark))
        return len(UNIT_ORDER) + next(marks, len(WORKER_ORDER))

    items.sort(key=rank)


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist: without it (-p no:xdist) unused
def pytest_xdist_make_scheduler(config, log):
    """--dist loadscope, but a worker is given its next module only when one test of its last is
    left (xdist's own waits for two): a module never waits on a worker behind a long one while
    another worker is free (the PJM pipeline run queued behind the Slurm ones took the whole
    suite to 15 min). One, not none: a worker keeps its last test until it knows the next."""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class OneModuleAhead(LoadScopeScheduling):
        def _reschedule(self, node):
            if node.shutting_down or not self.workqueue or self._pending_of(self.assigned_work[node]) <= 1:
                super()._reschedule(node)

    return OneModuleAhead(config, log)


def run_shared_dir(tmp_path_factory):
    """The directory of this test run that every pytest-xdist worker sees (each worker's own
    base temporary directory is inside it)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def made_once(tmp_path_factory, name, make):
    """run_shared_dir/name, made by make(path) once per test run: the first worker that needs it
    makes it while the others wait (a failed make is retried by the next that asks)."""
    shared = run_shared_dir(tmp_path_factory)
    path, done = shared / name, shared / f"{name}.done"
    with open(shared / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            if path.exists():
                shutil.rmtree(path)
            path.mkdir()
            make(path)
            done.touch()
    return path


@pytest.fixture(scope="session")
def testdata(tmp_path_factory):
    """The `test` preset of .test/make_testdata.py."""
    return made_once(tmp_path_factory, "testdata", lambda out: subprocess.run(
        [sys.executable, str(REPO / ".test" / "make_testdata.py"), str(out), "--preset", "test"],
        check=True,
        capture_output=True,
    ))


def write_config(directory, testdata, **overrides):
    """A config for the test data (based on .test/config/config.yaml, but with the indexed
    reference and no simple-repeat database: nothing to set up), with overrides (None removes a
    key), in directory."""
    config = yaml.safe_load((REPO / ".test" / "config" / "config.yaml").read_text())
    for key in ("simple_repeat_db", "resources_dir"):
        config.pop(key, None)
    config.update(
        reference=str(testdata / "ref" / "genome.fa"),
        samples=str(testdata / "samples.tsv"),
        pairs=str(testdata / "pairs.tsv"),
        output_dir="results",
    )
    return save_config(config, directory, overrides)


def save_config(config, directory, overrides):
    """config with overrides (None drops a key), written to directory/config.yaml; its path."""
    for key, value in overrides.items():
        if value is None:
            config.pop(key, None)
        else:
            config[key] = value
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def run_snakemake(config_path, *args, check=True, env=None, cwd=None):
    """Run the workflow from the repository root (RUN_DIR, or cwd: a view of it), as the README
    says."""
    command = [SNAKEMAKE, "--profile", "profiles/local", "--configfile", str(config_path), "--cores", "2", *args]
    result = subprocess.run(command, cwd=cwd or RUN_DIR, capture_output=True, text=True, env=env)
    if check and result.returncode != 0:
        raise AssertionError(f"snakemake failed ({result.returncode}):\n{result.stdout[-4000:]}\n{result.stderr[-8000:]}")
    return result


def parse_workflow(*configs, cores=2, command_line=None):
    """Snakemake's parse of the workflow in this process, from RUN_DIR with these config files, as
    `snakemake -n --cores CORES` starts: every parse-time check (rules/config.smk, rules/plans.smk)
    runs, and a refusal raises the WorkflowError that Snakemake would print; no job runs. About
    0.2 s where a `snakemake` process takes seconds to start (the fast lane's refusal tests).
    command_line: --config values, as Snakemake's parser gives them. Returns the parsed Workflow."""
    from snakemake.api import SnakemakeApi
    from snakemake.exceptions import WorkflowError

    from genomon_smk.plan.config_check import ConfigRefused
    from snakemake.settings.types import ConfigSettings, OutputSettings, ResourceSettings, StorageSettings

    cwd = os.getcwd()  # the API changes to the working directory
    # The parse adds the workflow's handler to Snakemake's process-wide logger (rules/retries.smk):
    # taken off again, so that a later test in this worker sees its own.
    logger = logging.getLogger("snakemake.logging")
    filters, handlers = list(logger.filters), list(logger.handlers)
    try:
        with SnakemakeApi(OutputSettings()) as api:
            workflow_api = api.workflow(
                resource_settings=ResourceSettings(cores=cores),
                config_settings=ConfigSettings(
                    config=command_line or {}, configfiles=[Path(config) for config in configs]
                ),
                storage_settings=StorageSettings(),
                snakefile=REPO / "workflow" / "Snakefile",
                workdir=RUN_DIR,
            )
            try:
                workflow_api.dag()
            except ConfigRefused as refused:  # printed and exit 1 in a snakemake process
                raise WorkflowError(str(refused)) from None
            return workflow_api._workflow
    finally:
        os.chdir(cwd)
        logger.filters[:], logger.handlers[:] = filters, handlers


@pytest.fixture(scope="session", autouse=True)
def no_slurm_probe(tmp_path_factory):
    """For the whole session until the `slurm` fixture starts the test Slurm: a `scontrol` that fails
    at once ahead of PATH. The Slurm executor plugin runs `scontrol show config` whenever Snakemake
    starts, whatever the executor, and that waits 9 s for a Slurm controller that is not running.
    Returns the environment for the tests that pass one explicitly."""
    bin_dir = tmp_path_factory.mktemp("no-slurm-probe")
    (bin_dir / "scontrol").write_text("#!/bin/sh\nexit 1\n")
    (bin_dir / "scontrol").chmod(0o755)
    os.environ["PATH"] = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    NO_SLURM_PROBE_DIRS.append(str(bin_dir))
    return dict(os.environ)


NO_SLURM_PROBE_DIRS: list[str] = []


# --- the scenario configs (.test/config*/), run as a user replays them

SCENARIO_DIRS = sorted(path.name for path in (REPO / ".test").glob("config*") if (path / "config.yaml").is_file())


@pytest.fixture(scope="session")
def scenario_root(tmp_path_factory, testdata):
    """A copy of .test/'s scenario directories beside a `data` link to the generated test data, so
    that every scenario config's relative paths (../data/..., ../results-<name>) work as in .test/."""
    def make(root):
        (root / "data").symlink_to(testdata, target_is_directory=True)
        for name in SCENARIO_DIRS:
            shutil.copytree(REPO / ".test" / name, root / name)

    return made_once(tmp_path_factory, "scenarios", make)


def scenario_output(root, name):
    """A scenario's output directory, as its config names it."""
    config = yaml.safe_load((root / name / "config.yaml").read_text())
    return (root / name / config["output_dir"]).resolve()


def reuse_mapped_samples(source, destination, samples):
    """Hard-link what the mapping stages made for `samples` (final BAMs, their QC, the region table
    and the staged-reference manifest) from one scenario's output directory into another's, so
    that a scenario which does not test the mapping runs only what it tests."""
    for sample in samples:
        for kind in ("bam", "qc"):
            shutil.copytree(source / kind / sample, destination / kind / sample, copy_function=os.link)
    for name in ("regions.tsv", "reference/staged.json"):
        (destination / name).parent.mkdir(parents=True, exist_ok=True)
        os.link(source / name, destination / name)


def run_scenario(root, name, *args, reuse=(), check=True):
    """Run the scenario `name` like a user (`--configfile .test/<name>/config.yaml`), after
    reusing the default scenario's mapped `reuse` samples; returns (output dir, result)."""
    results = scenario_output(root, name)
    if reuse:
        reuse_mapped_samples(scenario_output(root, "config"), results, reuse)
    result = run_snakemake(root / name / "config.yaml", *args, check=check)
    # Snakemake's record of what made each output (params, code) is in the working directory's
    # .snakemake/: a later dry run of this scenario in another worker's view would not see it.
    (root / name / MADE_IN).write_text(str(RUN_DIR))
    return results, result


MADE_IN = ".run_from"


@pytest.fixture(scope="session")
def pipeline_run(tmp_path_factory, scenario_root):
    """The default scenario (.test/config/config.yaml: tumor/normal + a three-normal panel), run in
    full once per test run; returns its output directory."""
    made_once(tmp_path_factory, "pipeline-run", lambda _: run_scenario(scenario_root, "config"))
    return scenario_output(scenario_root, "config")


@pytest.fixture(scope="session")
def pair_run(tmp_path_factory, scenario_root, pipeline_run):
    """The pair scenario (.test/config-pair: tumor/normal, no panel) on the default run's BAMs;
    returns its output directory. The cluster and fault tests run this smaller cohort in full and
    compare with it."""
    made_once(tmp_path_factory, "pair-run",
              lambda _: run_scenario(scenario_root, "config-pair", reuse=list(PAIR_SAMPLES)))
    return scenario_output(scenario_root, "config-pair")


PAIR_SAMPLES = ("tumor", "normal")


def scenario_variant(root, name, directory, **overrides):
    """The scenario `name`'s config with its output_dir in `directory` and overrides (as
    write_config's), written to directory/config.yaml: the same cohort on another profile."""
    config = yaml.safe_load((root / name / "config.yaml").read_text())
    for key in ("reference", "samples", "pairs", "genomon_sample_sheet", "simple_repeat_db", "resources_dir"):
        if key in config:
            config[key] = str((root / name / config[key]).resolve())
    config["output_dir"] = str(directory / "results")
    return save_config(config, directory, overrides)


def pair_targets(results):
    """The pair's final BAMs (+ index, md5) and mutation results: every rule of the mapping and
    mutation stages runs; QC (covered by the local run) is left out to keep cluster runs short."""
    bams = [results / f"bam/{s}/{s}.markdup.bam{suffix}" for s in PAIR_SAMPLES for suffix in ("", ".bai", ".md5")]
    mutation = [results / f"mutation/tumor/tumor.genomon_mutation.result{suffix}"
                for suffix in (".txt", ".filt.txt", ".filt.vcf.gz", ".filt.vcf.gz.tbi")]
    return [str(path) for path in bams + mutation]


def assert_same_pair_results(results, request):
    """A pair run's BAMs equal the default run's, its calls the pair scenario's, and no file is
    left on a temporary tier (the cache holds the staged reference). The local runs are asked
    for only here, so that another worker can make them while a cluster run waits for its jobs."""
    pipeline_run, pair_run = request.getfixturevalue("pipeline_run"), request.getfixturevalue("pair_run")
    for sample in PAIR_SAMPLES:
        name = f"bam/{sample}/{sample}.markdup.bam"
        assert bam_records(results / name) == bam_records(pipeline_run / name), sample
        digest = (results / f"{name}.md5").read_text().split()[0]
        assert digest == hashlib.md5((results / name).read_bytes()).hexdigest(), sample
    for suffix in (".txt", ".filt.txt"):
        name = f"mutation/tumor/tumor.genomon_mutation.result{suffix}"
        rows = result_rows(results / name)
        assert len(rows) > 1 and rows == result_rows(pair_run / name), name
    assert [p for p in (results / ".tiers").rglob("*") if p.is_file() and "cache" not in p.parts] == []


@pytest.fixture(scope="session")
def truth(testdata):
    return json.loads((testdata / "truth" / "meta.json").read_text())


# --- comparing a cluster run's results with the local run's (pipeline_run)


def bam_records(path, programs=False):
    """The BAM's records and its header without @PG lines (they name commands and paths) unless
    programs."""
    text = subprocess.run(["samtools", "view", "-h", "--no-PG", str(path)], capture_output=True, text=True,
                          check=True).stdout
    return [line for line in text.splitlines() if programs or not line.startswith("@PG")]


def result_rows(path):
    """A mutation result's rows without its # meta lines."""
    return [line for line in path.read_text().splitlines() if not line.startswith("#")]


# --- a real single-node Slurm (.test/slurm/start-slurm) and Snakemake runs that can be interrupted

START_SLURM = REPO / ".test" / "slurm" / "start-slurm"
REQUIRED_BINARIES = ("slurmctld", "slurmd", "munged", "sbatch", "squeue", "sinfo", "scontrol", "srun")
SNAKEMAKE_MODULE = [sys.executable, "-m", "snakemake"]


def _find_binary(name: str) -> str | None:
    """Locate a Slurm/munge binary; daemons live in /usr/sbin, which a non-login PATH may lack."""
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/bin")


def restore_sigint() -> None:
    """Run in the child before exec: undo an inherited SIG_IGN so SIGINT can stop Snakemake."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_interruptible(args: list[str], cwd: Path, log_path: Path | None = None) -> tuple[subprocess.Popen, Path]:
    """Start Snakemake in `cwd` in its own session with SIGINT enabled; output goes to log_path
    (default cwd/snakemake.out)."""
    log_path = log_path or cwd / "snakemake.out"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            SNAKEMAKE_MODULE + args,
            cwd=cwd,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=restore_sigint,
        )
    return proc, log_path


def interrupt(proc: subprocess.Popen) -> None:
    """SIGINT a running Snakemake (it then cancels its cluster jobs); killed if it does not end in 30 s."""
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def finish_interruptible(proc: subprocess.Popen, log_path: Path, timeout: float) -> tuple[int, str]:
    """Wait for Snakemake; on timeout SIGINT it (it then cancels its Slurm jobs) and fail the test."""
    try:
        rc = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        interrupt(proc)
        pytest.fail(f"snakemake did not finish in {timeout} s:\n{log_path.read_text()[-4000:]}")
    return rc, log_path.read_text()


def run_interruptible(args: list[str], cwd: Path, timeout: float, log_path: Path | None = None) -> tuple[int, str]:
    """Run Snakemake in `cwd` to the end; return (exit code, combined output)."""
    return finish_interruptible(*start_interruptible(args, cwd, log_path), timeout=timeout)


@pytest.fixture(scope="session")
def slurm():
    """A running single-node Slurm (idempotent start); skipped only without root or the packages.
    Stopped at the end of the session if the tests started it."""
    # From here on Snakemake talks to this Slurm: the real scontrol answers at once.
    os.environ["PATH"] = os.pathsep.join(
        part for part in os.environ["PATH"].split(os.pathsep) if part not in NO_SLURM_PROBE_DIRS
    )
    if os.geteuid() != 0:
        pytest.skip("the local Slurm needs root (start-slurm starts munged/slurmctld/slurmd)")
    missing = [name for name in REQUIRED_BINARIES if _find_binary(name) is None]
    if missing:
        pytest.skip(f"Slurm/munge packages missing ({', '.join(missing)}): "
                    "apt-get install slurmctld slurmd slurm-client munge")
    # What ran before the tests (a developer's Slurm, a munged) is left running afterwards.
    running_before = {name: subprocess.run(["pgrep", "-x", name], capture_output=True).returncode == 0
                      for name in ("slurmctld", "munged")}
    result = subprocess.run([str(START_SLURM)], capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        pytest.fail(f"start-slurm failed (rc {result.returncode}):\n{result.stdout}\n{result.stderr}")
    yield result.stdout.strip()
    if not running_before["slurmctld"]:
        env = dict(os.environ, KEEP_MUNGE="1" if running_before["munged"] else "0")
        subprocess.run([str(START_SLURM.with_name("stop-slurm"))], capture_output=True, timeout=120, env=env)




def job_stats(output: str) -> dict[str, int]:
    """Snakemake's Job stats table: jobs per rule (the first table of the output; {} when there is
    nothing to be done)."""
    if "Job stats:" not in output:
        return {}
    counts = {}
    for line in output[output.index("Job stats:"):].splitlines()[3:]:
        cells = line.split()
        if len(cells) != 2 or not cells[1].isdigit() or cells[0] == "total":
            break
        counts[cells[0]] = int(cells[1])
    return counts


def retuned_jobs(config_path, section, key, value):
    """The jobs a dry run plans after the config's section.key (section None: the top-level key)
    is set to value (a copy of the config beside it, so its relative paths and output_dir stay
    the same), by rule."""
    config = yaml.safe_load(Path(config_path).read_text())
    (config if section is None else config.setdefault(section, {}))[key] = value
    retuned = Path(config_path).with_name(f"retuned-{section}-{key}.yaml")
    retuned.write_text(yaml.safe_dump(config))
    made_in = Path(config_path).with_name(MADE_IN)
    result = run_snakemake(retuned, "-n", cwd=made_in.read_text() if made_in.exists() else None)
    return job_stats(result.stdout + result.stderr)


# The PJM tests run as on Fugaku, whose login nodes (x86-64) and compute nodes (aarch64) cannot
# run each other's binaries: the emulator's foreign-architecture mode makes this interpreter's
# bin/ (the login venv) unexecutable inside every job ('cannot execute binary file: Exec format
# error'), and jobs run the compute venv below (plugin setting --pjm-compute-venv).
LOGIN_VENV_BIN = Path(sys.executable).parent


def make_compute_venv(root: Path) -> Path:
    """A venv at root standing for the compute nodes' venv: its own interpreter (a link to the
    base Python, not through the login venv), the login venv's packages (their *.dist-info too,
    which the plugin reads to compare versions) linked into its site-packages, and its own copies
    of the login venv's console scripts, their #! naming its interpreter."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, capture_output=True)
    login_site = Path(sysconfig_path("purelib"))
    site = root / login_site.relative_to(Path(sys.prefix))
    for entry in login_site.iterdir():
        if not (site / entry.name).exists():
            (site / entry.name).symlink_to(entry)
    python = root / "bin" / "python"
    for script in LOGIN_VENV_BIN.iterdir():
        target = root / "bin" / script.name
        if target.exists() or target.is_symlink() or not script.is_file():
            continue
        with open(script, "rb") as handle:
            first = handle.readline()
        if first.startswith(b"#!") and str(LOGIN_VENV_BIN).encode() in first:
            body = script.read_bytes().split(b"\n", 1)[1]
            target.write_bytes(b"#!" + str(python).encode() + b"\n" + body)
            target.chmod(0o755)
    return root


def sysconfig_path(name: str) -> str:
    import sysconfig
    return sysconfig.get_paths()[name]


@pytest.fixture(scope="session")
def compute_venv(tmp_path_factory):
    """The compute side's venv for the PJM tests (see make_compute_venv)."""
    return make_compute_venv(tmp_path_factory.mktemp("compute") / "venv")
