"""Every Snakemake internal the workflow touches, behind one door.

The workflow's .smk files read the running Snakemake through these functions only (plus its
documented API: `workflow.basedir`, `config`, `rules`, `WorkflowError`, `validate`,
`min_version`). Each accessor names the attribute it reads in the pinned Snakemake (9.27, see
requirements.txt) and has a test against it (tests/test_snakemake_adapter.py): a Snakemake
upgrade that moves one fails there, not in a user's run.

Process roles. Snakemake parses the workflow in every process: the main one (the command the
user runs, dry run or not) and each job's own (`--mode remote` on a cluster node, `--mode
subprocess` for a local job). Planning and checks that only the main process needs (the plans,
the cohort's file checks, the console) run only where `is_main_process` is true.
"""

from __future__ import annotations

import atexit
import collections
import contextvars
import functools
import gc
import logging
import sys
import threading
import types
from collections.abc import Callable
from pathlib import Path

CLUSTERS = ("local", "slurm", "slurm-allocation", "pjm", "pjm-allocation")


def is_main_process(workflow) -> bool:
    """The process the user started (Workflow.is_main_process: exec mode DEFAULT)."""
    return bool(workflow.is_main_process)


def is_job_process(workflow) -> bool:
    """A job's own Snakemake: `--mode remote` (a cluster job) or `--mode subprocess` (a local
    job run by the main process)."""
    return bool(workflow.remote_exec or workflow.subprocess_exec)


def config_files(workflow) -> list[str]:
    """The --configfile paths in command-line order (Workflow.overwrite_configfiles)."""
    return [str(path) for path in workflow.overwrite_configfiles or []]


def command_line_config(workflow) -> dict:
    """The --config values (a profile's `config:` entries included) as Snakemake parsed them
    (ConfigSettings.config; its overwrite_config has the config files' values too); {} when none."""
    return dict(workflow.config_settings.config or {})


def uses_conda(workflow) -> bool:
    """--sdm conda (DeploymentSettings.deployment_method holds DeploymentMethod.CONDA)."""
    from snakemake.settings.types import DeploymentMethod

    return DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method


def default_resource_args(workflow) -> list[str]:
    """The --default-resources as given, KEY=VALUE strings (ResourceSettings.default_resources
    .args; [] when none)."""
    defaults = workflow.resource_settings.default_resources
    return list(defaults.args) if defaults and defaults.args else []


def cluster_kind(configured: str | None, workflow) -> str:
    """Where the jobs run: config `cluster` (the profiles set it), else "pjm" for a profile that
    predates the key and gives every job a PJM resource group (its pjsub command needs
    pjm_rscgrp), else "local"."""
    if configured:
        return configured
    if any(arg.startswith("pjm_rscgrp=") for arg in default_resource_args(workflow)):
        return "pjm"
    return "local"


def total_cores(workflow) -> int | None:
    """--cores as Snakemake resolved it (Workflow._cores via Workflow.cores); None when unset or
    unbounded (a cluster executor)."""
    from snakemake.exceptions import WorkflowError

    try:
        cores = workflow.cores
    except WorkflowError:
        return None
    return None if cores is None or cores >= sys.maxsize else cores


def local_cores(workflow) -> int | None:
    """The cores of a run whose jobs this machine's executor runs (total_cores), the same in the
    main process and a local job's subprocess (Snakemake passes it the run's --cores); None
    with a cluster executor (Workflow.local_exec false: unbounded cores) and in a cluster job's
    own process (Workflow.remote_exec: its --cores is "all", the node's, not the run's)."""
    if workflow.remote_exec or not workflow.local_exec:
        return None
    return total_cores(workflow)


def fixed_threads(workflow) -> dict[str, int | None]:
    """Every rule's thread count (Rule.resources["_cores"], a Resource in Snakemake 9); None for
    one a function gives per job."""

    def value(resource):
        if hasattr(resource, "is_evaluable"):
            return None if resource.is_evaluable() else resource.value
        return resource

    return {rule.name: value(rule.resources.get("_cores")) for rule in workflow.rules}


def wrap_unlock(workflow, wrapper: Callable[[Callable[[], None]], Callable[[], None]]) -> None:
    """`snakemake --unlock` parses the workflow, then calls Workflow.unlock(): replace it by
    wrapper(the original) (Snakemake 9 has no setting the workflow could read for it)."""
    workflow.unlock = wrapper(workflow.unlock)


def shows_every_job(workflow) -> bool:
    """-p or --verbose: the user asked for Snakemake's full block per job
    (OutputSettings.printshellcmds, .verbose)."""
    settings = workflow.output_settings
    return bool(settings.printshellcmds or settings.verbose)


def is_dry_run(workflow) -> bool:
    """-n (Workflow.dryrun: the executor is the dry-run one; false while the Snakefile is
    parsed, so read it when a record is logged)."""
    return bool(workflow.dryrun)


def snakemake_logger() -> logging.Logger:
    """The logger Snakemake prints through ("snakemake.logging")."""
    return logging.getLogger("snakemake.logging")


def log_event(record: logging.LogRecord):
    """The LogEvent a Snakemake record carries (snakemake_interface_logger_plugins), or None."""
    return getattr(record, "event", None)


def is_rules_chatter(record: logging.LogRecord) -> bool:
    """A record Snakemake marks as --quiet rules (temp-file removals)."""
    from snakemake.settings.enums import Quietness

    return getattr(record, "quietness", None) == Quietness.RULES


def jobs_rerun_for_param(workflow, param: str) -> list[dict]:
    """The wildcards of every job of this run (finished or to run: DAG.needrun_jobs with
    exclude_finished=False) that runs because its param `param` changed: its Reason's
    params_changed (snakemake.persistence.ParamsChange) holds the job's new value of it in
    only_new (as Persistence._serialize_param stores a value: its repr). [] before a DAG is
    built (Workflow.dag None)."""
    dag = workflow.dag
    if dag is None:
        return []
    found = []
    for job in dag.needrun_jobs(exclude_finished=False):
        changed = dag.reason(job).params_changed
        if not changed or param not in job.rule.params.keys():
            continue
        if repr(getattr(job.params, param)) in changed.only_new:
            found.append(dict(job.wildcards.items()))
    return found


def log_events():
    """snakemake_interface_logger_plugins.common.LogEvent."""
    from snakemake_interface_logger_plugins.common import LogEvent

    return LogEvent


def plan_faster() -> None:
    """Main process only: four costs of Snakemake's planning that this workflow does not need, cut
    (bench/dryrun_scale.py, docs/benchmarks.md):
    - a dry run formats every job's block (its shell command three times) for a record the
      console drops (rules/console.smk) unless -p or --verbose: the dry-run executor's printjob
      skips it then (snakemake.executors.dryrun.Executor.printjob);
    - Snakemake asks inspect.signature for the parameters of every rule function once per job
      (snakemake.common.get_function_params, also imported by name into snakemake.rules and
      snakemake.jobs): remembered per function;
    - every job's conda env spec (Job.conda_env_spec, asked for every job by
      DAG.update_conda_envs) evaluates the job's params before Rule.expand_conda_env returns the
      rule's cached spec: the cached spec is returned without them (a dry run then evaluates
      params only where it needs them, e.g. the params rerun trigger of a job that ran);
    - a dry run's scheduler takes no resources for the jobs it lists (JobScheduler.schedule:
      `run = needrun`), yet gives every finished job's back (JobScheduler._free_resources),
      which evaluates every job's resources: skipped in a dry run."""
    import snakemake.common
    import snakemake.executors.dryrun as dryrun
    import snakemake.jobs
    import snakemake.rules
    import snakemake.scheduling.job_scheduler as job_scheduler

    executor = dryrun.Executor
    if not hasattr(executor.printjob, "full"):
        full = executor.printjob

        def printjob(self, job):
            if shows_every_job(self.workflow):
                return full(self, job)
            for single in job.jobs if job.is_group() else [job]:
                self.printcache(single)

        printjob.full = full
        executor.printjob = printjob
    for module in (snakemake.common, snakemake.rules, snakemake.jobs):
        if not hasattr(module.get_function_params, "uncached"):
            module.get_function_params = remembered(module.get_function_params)
    scheduler = job_scheduler.JobScheduler
    if not hasattr(scheduler._free_resources, "full"):
        scheduler._free_resources = not_in_dry_runs(scheduler._free_resources)
    job = snakemake.jobs.Job
    if not hasattr(job.conda_env_spec.fget, "full"):
        job.conda_env_spec = property(rule_env_first(job.conda_env_spec.fget, snakemake.rules._NOT_CACHED))


def end_at_once() -> None:
    """Main process only: a run ends when its last job has, not up to a second later.
    - After every scheduling round Snakemake starts a threading.Timer (its
      --max-jobs-per-timespan window, 1 s by default) that only wakes the scheduler again
      (JobScheduler._schedule_reevalutation); the timers are not daemon threads, so the
      interpreter waited for the last one at exit (about a second per run, measured: 0.8-1.0 s
      after Snakemake's last line). The same timers as daemon threads.
    - At exit the interpreter's last garbage collection walks every object of the process
      (0.15-0.2 s after a run's last line): an exit handler freezes them (gc.freeze; the
      handlers registered before it, such as logging's, still flush and close what they own),
      and the operating system reclaims their memory."""
    import snakemake.scheduling.job_scheduler as job_scheduler

    scheduler = job_scheduler.JobScheduler
    if not hasattr(scheduler._schedule_reevalutation, "full"):
        scheduler._schedule_reevalutation = daemon_timer(scheduler._schedule_reevalutation)
    atexit.unregister(gc.freeze)  # once, however often the workflow is parsed
    atexit.register(gc.freeze)


def daemon_timer(full):
    """JobScheduler._schedule_reevalutation on a daemon Timer (full: Snakemake's)."""

    def schedule_reevaluation(scheduler, delay):
        timer = threading.Timer(delay, scheduler._open_jobs.release)
        timer.daemon = True
        timer.start()

    schedule_reevaluation.full = full
    return schedule_reevaluation


def not_in_dry_runs(full):
    """A JobScheduler method that does nothing in a dry run (JobScheduler.dryrun)."""

    def method(scheduler, *args, **kwargs):
        if scheduler.dryrun:
            return None
        return full(scheduler, *args, **kwargs)

    method.full = full
    return method


def rule_env_first(full, not_cached):
    """Job.conda_env_spec, returning the rule's cached spec (Rule._expanded_conda_env) without
    evaluating the job's params; full(job) otherwise."""

    def conda_env_spec(job):
        if job._conda_env_spec is None:
            cached = job.rule._expanded_conda_env
            if cached is not not_cached:
                return cached
        return full(job)

    conda_env_spec.full = full
    return conda_env_spec


def remembered(get_params):
    """get_params(function), remembered per function (a function that cannot be a dict key is
    asked each time)."""
    cache = functools.lru_cache(maxsize=4096)(get_params)

    def get_function_params(func):
        try:
            return cache(func)
        except TypeError:
            return get_params(func)

    get_function_params.uncached = get_params
    return get_function_params


def plan_smaller() -> None:
    """Main process only: Snakemake's objects per job made smaller when they are made, the DAG
    unchanged (a 1,000-pair cohort plans about 262,000 jobs: each byte a job keeps is a quarter
    of a megabyte; 6.1 -> 3.7 GB there, bench/dryrun_scale.py, docs/benchmarks.md):
    - every file of a job (Rule.expand_input/expand_output/expand_log/expand_benchmark) keeps a
      second copy of its path as an AnnotatedString with its own attribute dict and flags dict
      (_IOFile._file, made by clone_flags) even when it has no flags: a plain str then (the same
      text, hash and equality; _IOFile.flags reads {} from it, is_flagged is false, as before);
      flags that are all true/false (temp, protected, directory) are one shared dict per set of
      flags (as AnnotatedString.new_from shares them; nothing changes a job's flags once made);
      a file made from another file (an input function's paths) holds that file's innermost
      path, not the file and its AnnotatedString;
    - every Namedlist (a job's input, output, log, wildcards, params) makes its own list of the
      names `index` and `sort` may take and an AttributeGuard for each (Namedlist.__init__):
      one shared list and guard per name (nothing changes them; a name given to an item still
      replaces its guard), and a tuple (index, end) per name (Namedlist._set_name): one shared
      tuple per value;
    - every job's wildcard values are strings of their own (JobFactory.new): interned, one
      string per sample or region name;
    - every job keeps five sets (Job.temp_output, protected_output, touch_output,
      pipe_or_service_output, _queue_input), filled in Job.__init__ and only read after it: an
      empty one is the shared empty frozenset.
    And in DAG.update_needrun: it starts one asyncio task per job at once for the jobs' output
    times (an asyncio.TaskGroup in snakemake.dag), each suspended with its own task group per
    output file until all have started (about 3 KB a job, the dry run's peak): there the tasks
    run one after the other (TasksInTurn), the same times computed; and it leaves every job's
    Reason an empty set of updated input (a lazy property read): dropped after it (None, the
    state Reason.clear leaves, made again on the next read)."""
    import snakemake.dag
    import snakemake.iocontainers
    import snakemake.jobs
    import snakemake.rules

    namedlist = snakemake.iocontainers.Namedlist
    if not hasattr(namedlist.__init__, "full"):
        namedlist.__init__ = shared_guards(namedlist.__init__, snakemake.iocontainers.AttributeGuard)
        namedlist._set_name = shared_name_places(namedlist._set_name)
    factory = snakemake.jobs.JobFactory
    if not hasattr(factory.new, "full"):
        factory.new = interned_wildcards(factory.new)
    rule = snakemake.rules.Rule
    for name in ("expand_input", "expand_output", "expand_log", "expand_benchmark"):
        if not hasattr(getattr(rule, name), "full"):
            setattr(rule, name, plain_unflagged_paths(getattr(rule, name)))
    job = snakemake.jobs.Job
    if not hasattr(job.__init__, "full"):
        job.__init__ = shared_empty_sets(job.__init__)
    dag = snakemake.dag.DAG
    if not hasattr(dag.update_needrun, "full"):
        snakemake.dag.asyncio = AsyncioInTurn(snakemake.dag.asyncio)
        dag.update_needrun = leaner_needrun(dag.update_needrun)


def shared_guards(full, guard_class):
    """Namedlist.__init__, then its `index`/`sort` guards and their list shared."""
    overrides = ["index", "sort"]
    guards = {name: guard_class(name) for name in overrides}

    def __init__(self, *args, **kwargs):
        full(self, *args, **kwargs)
        attributes = self.__dict__
        if attributes.get("_allowed_overrides") == overrides:
            attributes["_allowed_overrides"] = overrides
        for name, guard in guards.items():
            if type(attributes.get(name)) is guard_class:
                attributes[name] = guard

    __init__.full = full
    return __init__


def shared_name_places(full):
    """Namedlist._set_name, then the (index, end) tuple it stored replaced by a shared equal one."""
    places = {}

    def _set_name(self, name, index, end=None):
        full(self, name, index, end)
        place = self._names[name]
        self._names[name] = places.setdefault(place, place)

    _set_name.full = full
    return _set_name


def interned_wildcards(full):
    """JobFactory.new with the job's wildcard values interned."""

    async def new(factory, rule, dag, wildcards_dict=None, *args, **kwargs):
        if wildcards_dict:
            wildcards_dict = {
                name: sys.intern(value) if type(value) is str else value for name, value in wildcards_dict.items()
            }
        return await full(factory, rule, dag, wildcards_dict, *args, **kwargs)

    new.full = full
    return new


def plain_unflagged_paths(full):
    """A Rule.expand_* method whose files keep their innermost path: a plain str without flags,
    an AnnotatedString with shared flags when they are all true/false."""
    from snakemake.io import AnnotatedString, _IOFile

    shared_flags = {}

    def plain(file):
        inner = file._file
        # A file made from a file (an input function's path) keeps that file as its _file:
        # the innermost one holds the same text and the flags.
        while type(inner) is _IOFile and not inner._is_callable:
            inner = inner._file
        if type(inner) not in (str, AnnotatedString) or not str.__eq__(inner, file):
            return
        if type(inner) is AnnotatedString:
            if inner.callable is not None:
                return
            flags = inner.flags
            if not flags:
                inner = str(inner)
            elif all(type(value) is bool for value in flags.values()):
                inner.flags = shared_flags.setdefault(tuple(sorted(flags.items())), flags)
        file._file = inner

    def expand(rule, *args, **kwargs):
        result = full(rule, *args, **kwargs)
        files = result[0] if isinstance(result, tuple) else result
        if isinstance(files, _IOFile):
            plain(files)
        elif files is not None:
            for file in files:
                if isinstance(file, _IOFile):
                    plain(file)
        return result

    expand.full = full
    return expand


def shared_empty_sets(full):
    """Job.__init__, then its empty file sets replaced by the shared empty frozenset."""
    names = ("temp_output", "protected_output", "touch_output", "pipe_or_service_output", "_queue_input")
    empty = frozenset()

    def __init__(job, *args, **kwargs):
        full(job, *args, **kwargs)
        for name in names:
            if not getattr(job, name):
                setattr(job, name, empty)

    __init__.full = full
    return __init__


IN_TURN = contextvars.ContextVar("genomon_smk_tasks_in_turn", default=False)


class TasksInTurn:
    """An asyncio.TaskGroup whose coroutines run one after the other when its `async with`
    ends (a failure: the rest closed, an ExceptionGroup raised, as a TaskGroup does)."""

    def __init__(self):
        self._coroutines = collections.deque()

    async def __aenter__(self):
        return self

    def create_task(self, coroutine, **_):
        self._coroutines.append(coroutine)

    async def __aexit__(self, kind, error, traceback):
        coroutines = self._coroutines
        if kind is not None:
            for coroutine in coroutines:
                coroutine.close()
            return False
        while coroutines:
            try:
                await coroutines.popleft()
            except Exception as failure:
                for coroutine in coroutines:
                    coroutine.close()
                raise ExceptionGroup("unhandled errors in a TaskGroup", [failure]) from None
        return False


class AsyncioInTurn(types.ModuleType):
    """The asyncio module as snakemake.dag sees it: a TaskGroup() asked for while IN_TURN is set
    is a TasksInTurn."""

    def __init__(self, real):
        super().__init__(real.__name__)
        self._real = real

    def __getattr__(self, name):
        return getattr(self._real, name)

    def TaskGroup(self):  # noqa: N802 (asyncio's name)
        return TasksInTurn() if IN_TURN.get() else self._real.TaskGroup()


REASON_SETS = ("_updated_input", "_updated_input_run", "_missing_output", "_incomplete_output")


def leaner_needrun(full):
    """DAG.update_needrun with its task groups run in turn (IN_TURN set while it runs), then the
    empty sets of every job's Reason (REASON_SETS, lazy properties) dropped."""

    async def update_needrun(dag, *args, **kwargs):
        token = IN_TURN.set(True)
        try:
            result = await full(dag, *args, **kwargs)
        finally:
            IN_TURN.reset(token)
        for reason in dag._reason.values():
            for name in REASON_SETS:
                value = getattr(reason, name)
                if value is not None and not value:
                    setattr(reason, name, None)
        return result

    update_needrun.full = full
    return update_needrun


# --- the workflow's own place, and its hooks as a module


def workflow_dir(workflow) -> Path:
    """The directory of the Snakefile being parsed (workflow.current_basedir, a SourceFile): the
    checkout's workflow/, also when a user's Snakefile uses it as a module (workflow.basedir is
    then the user's directory)."""
    return Path(workflow.current_basedir.get_path_or_uri(secret_free=False))


def workflow_source(workflow) -> str:
    """Where the Snakefile being parsed comes from, without secrets (for messages)."""
    return workflow.current_basedir.get_path_or_uri(secret_free=True)


def is_module(workflow) -> bool:
    """Whether the Snakefile being parsed is a module of another (WorkflowModifier.base_snakefile)."""
    return not workflow.modifier.is_main_snakefile()


def add_hooks(workflow, **hooks: Callable[[], None]) -> None:
    """Run these as the workflow's onstart/onsuccess/onerror too. Snakemake keeps only the main
    Snakefile's hooks (Workflow._onstart ...; a module's `onstart:` is dropped): each of ours runs
    after the hook registered so far (the user's, when defined before the module statement; a
    hook the user defines after it replaces ours)."""
    for kind, ours in hooks.items():
        attribute = f"_{kind}"
        theirs = getattr(workflow, attribute)

        def both(log=None, theirs=theirs, ours=ours):
            theirs(log)
            ours()

        setattr(workflow, attribute, both)


# --- resources that depend on the attempt (genomon_smk.runtime.retries)


def job_attempt(workflow) -> int:
    """The attempt a job process runs (--attempt, Workflow.attempt); 1 in the Snakemake process."""
    return workflow.attempt


def wrap_resources(workflow, names: tuple[str, ...], wrap) -> None:
    """Replace each of these resources of every rule that has a log and the resource (Rule.resources,
    a Resources mapping of Resource, after default-resources, the rule's own and set-resources)
    with `wrap(name, value, log_of)`: a function of (wildcards, input, attempt, threads,
    rulename, async_run), where value(...) is the rule's own value for those arguments and
    log_of(wildcards) the job's first log file."""
    import inspect

    from snakemake.resources import Resource

    for rule in workflow.rules:
        logs = list(rule.log)
        if not logs:
            continue
        pattern = logs[0]

        def log_of(wildcards, pattern=pattern):
            return str(pattern.apply_wildcards(dict(wildcards.items())))

        for name in names:
            if name not in rule.resources.keys():
                continue
            original = rule.resources.get(name)
            if not (original.is_evaluable() or original.raw is not None):
                continue

            def value(wildcards, input, attempt, threads, rulename, async_run, original=original):
                return original.evaluate(
                    wildcards, input=input, attempt=attempt, threads=threads, rulename=rulename, async_run=async_run
                ).value

            function = wrap(name, value, log_of)
            # Snakemake reads a resource function's parameters on every evaluation
            # (inspect.signature) unless the function carries them: once here, not once per job.
            function._overwrite_params = inspect.signature(function).parameters
            rule.resources[name] = Resource(name, function, raw=original.raw)
