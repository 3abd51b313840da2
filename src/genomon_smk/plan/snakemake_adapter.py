"""Every Snakemake internal the workflow touches, behind one door.

The workflow's .smk files read the running Snakemake through these functions only (plus its
documented API: `workflow.basedir`, `config`, `rules`, `WorkflowError`, `validate`,
`min_version`). Each accessor names the attribute it reads in the pinned Snakemake (9.27, see
requirements.txt) and has a test against it (tests/test_snakemake_adapter.py): a Snakemake
upgrade that moves one fails there, not in a user's run.

The optimisation patches of Snakemake's planning live apart, behind a version gate
(genomon_smk.plan.snakemake_patches); what is here reads Snakemake's state or adds to it through
documented doors, and is needed on every supported Snakemake.

Process roles. Snakemake parses the workflow in every process: the main one (the command the
user runs, dry run or not) and each job's own (`--mode remote` on a cluster node, `--mode
subprocess` for a local job). Planning and checks that only the main process needs (the plans,
the cohort's file checks, the console) run only where `is_main_process` is true.
"""

from __future__ import annotations

import gc
import logging
import sys
import threading
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


# The config `cluster` each executor the profiles choose goes with (the allocation profiles run
# their jobs through cluster-generic's srun/pjsub steps).
EXECUTOR_CLUSTERS = {"slurm": "slurm", "pjm": "pjm", "cluster-generic": "slurm-allocation or pjm-allocation"}


def executor_name(workflow) -> str | None:
    """The executor plugin of the run (Workflow.executor_plugin, set when the run starts: None
    while the workflow is parsed)."""
    return getattr(getattr(workflow, "executor_plugin", None), "name", None)


def cluster_mismatch(cluster: str, executor: str | None) -> str | None:
    """The problem of a run whose jobs go to a cluster executor while config `cluster` says local
    (a `--config` on the command line replaced the profile's `cluster=...`), or None."""
    if cluster != "local" or executor not in EXECUTOR_CLUSTERS:
        return None
    return (f"config 'cluster' is local but the jobs go to the {executor} executor (a --config on the "
            f"command line replaces the profile's cluster=...): add cluster={EXECUTOR_CLUSTERS[executor]} "
            "to your --config, or set it in your config file (as it is, the run was planned with a local "
            "run's threads and storage tiers)")


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


def is_dry_run(workflow) -> bool:
    """-n (Workflow.dryrun: the executor is the dry-run one; false while the Snakefile is
    parsed, so read it when a record is logged)."""
    return bool(workflow.dryrun)


def snakemake_logger() -> logging.Logger:
    """The logger Snakemake prints through ("snakemake.logging")."""
    return logging.getLogger("snakemake.logging")


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


def wrap_resources(workflow, names: tuple[str, ...], wrap, under: Path | None = None) -> None:
    """Replace each of these resources of every rule that has a log and the resource (Rule.resources,
    a Resources mapping of Resource, after default-resources, the rule's own and set-resources)
    with `wrap(name, value, log_of)`: a function of (wildcards, input, attempt, threads,
    rulename, async_run), where value(...) is the rule's own value for those arguments and
    log_of(wildcards) the job's first log file. under: only the rules defined in Snakefiles below
    this directory (Rule.snakefile): as a module, the workflow's own rules, not the host's."""
    import inspect

    from snakemake.resources import Resource

    for rule in workflow.rules:
        logs = list(rule.log)
        if not logs:
            continue
        if under is not None and not Path(str(rule.snakefile)).resolve().is_relative_to(under.resolve()):
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


# The module whose scheduler starts a threading.Timer after each scheduling round (the
# --max-jobs-per-timespan window, 1 s by default) only to wake itself up again.
SCHEDULER_MODULE = "snakemake.scheduling.job_scheduler"


def end_promptly() -> None:
    """From onsuccess and onerror, once the scheduler is done: cancel its wake-up timers, which
    are not daemon threads, so the interpreter would wait up to a second for the last one before
    the process ends; then freeze the process's objects (gc.freeze) so the interpreter's last
    collection does not walk them all. Nothing else is touched: a timer of another module, or
    of a Snakemake whose scheduler moved, is left to run out, as without this."""
    for thread in threading.enumerate():
        if isinstance(thread, threading.Timer) and getattr(thread.function, "__module__", None) == SCHEDULER_MODULE:
            thread.cancel()
    gc.freeze()
