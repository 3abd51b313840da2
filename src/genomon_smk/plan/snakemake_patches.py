"""Optimisations of Snakemake's planning for cohort-scale runs, behind a gate.

Each patch replaces a private method of the Snakemake it was written against, so it applies only
where it was tested: on the Snakemake versions in TESTED_SNAKEMAKE (the pin of requirements.txt),
in the process the user started, and not when the workflow is a module of another workflow (the
patches are process-wide: they would change the host workflow's planning too) unless the config
says `snakemake_patches: true`. Anywhere else the plan says so in one line and Snakemake plans as
it is: the same jobs and results, more memory and time for a cohort of hundreds of pairs.

Every patch is listed, with its measured gain, the upstream change that would make it
unnecessary and the test that fails first when Snakemake moves, in docs/snakemake-internals.md.
"""

from __future__ import annotations

import collections
import contextvars
import functools
import gc
import logging
import logging.handlers
import os
import pathlib
import sys
import types
import weakref

# The Snakemake versions the patches were tested on (tests/test_snakemake_patches.py runs them on
# the installed one; requirements.txt pins one of these).
TESTED_SNAKEMAKE = ("9.27.1",)


def patch_decision(version: str, as_module: bool, setting) -> tuple[bool, str | None]:
    """Whether to patch Snakemake's planning, and the plan's line when not (None: nothing to
    say). setting: config `snakemake_patches` ("auto", true or false)."""
    if setting is False:
        return False, None
    if version not in TESTED_SNAKEMAKE:
        return False, (
            f"genomon-smk: Snakemake {version} plans unpatched (the planning optimisations were tested on "
            f"{', '.join(TESTED_SNAKEMAKE)}): the same jobs and results, more memory for a large cohort "
            "(docs/snakemake-internals.md)"
        )
    if as_module and setting != True:  # noqa: E712 ("auto" is not an opt-in)
        return False, (
            "genomon-smk: as a module of another workflow, Snakemake's planning is left unpatched "
            "(config snakemake_patches: true patches it for the whole run, the host's rules too)"
        )
    return True, None


def snakemake_version() -> str:
    from snakemake import __version__

    return __version__


def apply(as_module: bool, setting) -> str | None:
    """Patch Snakemake's planning where patch_decision allows it; the plan's line otherwise."""
    patch, note = patch_decision(snakemake_version(), as_module, setting)
    if patch:
        plan_faster()
        plan_smaller()
    return note


def plan_faster() -> None:
    """Main process only: three costs of Snakemake's planning that this workflow does not need, cut
    (bench/dryrun_scale.py, docs/benchmarks.md):
    - Snakemake asks inspect.signature for the parameters of every rule function once per job
      (snakemake.common.get_function_params, also imported by name into snakemake.rules and
      snakemake.jobs): remembered per function;
    - every job's conda env spec (Job.conda_env_spec, asked for every job by
      DAG.update_conda_envs) evaluates the job's params before Rule.expand_conda_env returns the
      rule's cached spec: the cached spec is returned without them (a dry run then evaluates
      params only where it needs them, e.g. the params rerun trigger of a job that ran);
    - a dry run's scheduler takes no resources for the jobs it lists (JobScheduler.schedule:
      `run = needrun`), yet gives every finished job's back (JobScheduler._free_resources),
      which evaluates every job's resources: skipped in a dry run;
    - every job's record (Job.log_info, once per job, dry run or not) formats the job's shell
      command three times (Job.shellcmd: the JOB_INFO record's field, the SHELLCMD record's
      message and field), each a format of the rule's shell with the Snakefile's globals: once
      per record (the same text; a fifth of a dry run's CPU);
    - in a dry run whose job records no log handler shows (records_shown: `--quiet rules`, or
      this workflow's console, which lists no jobs in a dry run), every job's record is still
      built (its files formatted, params, resources and shell command evaluated, then dropped by
      every handler): built for the first job of each rule only (a rule's template or function
      that fails still stops the dry run there), skipped for the rest (a third of a cohort's
      dry run);
    - `is_flagged(file, flag)`, asked millions of times while a cohort's DAG is built (every
      file, for storage, temp, pipe ... flags), takes an isinstance of an abstract class for each:
      a plain str, or a file whose path is a plain str (plan_smaller makes most of them so), has
      no flags: False at once, and a path with flags (an AnnotatedString) answers from its flags
      dict (the same answer);
    - `apply_wildcards(pattern, wildcards)` (every file of every job) runs the wildcard regex's
      substitution over the pattern each time: a pattern's pieces are found once (a path
      without a brace has no wildcard and is returned as the substitution returns it);
    - DAG.check_directory_outputs sorts a pathlib.Path of every output of every job to find one
      inside another job's directory: the same sort and test on the paths' parts as tuples of
      strings (the Path made only for the error);
    - the interpreter's full garbage collection walks every object of the process each time
      the objects it holds grew by a quarter: a DAG of 375,000 jobs is made of tens of millions
      of objects, walked again and again while it grows (a tenth of a cohort's dry run). Full
      collections run a hundred times less often (the third threshold of gc.set_threshold;
      the younger generations, which free a job's short-lived cycles, as before);
    - _IOFile.check (every file of every job) formats the rule's name, line and Snakefile for
      its warnings before it tests the path: nothing is formatted for a path that none of its
      warnings is about (the same warnings for the others);
    - PrefixLookup._common_prefix (Snakemake's search for the rules that may make a file)
      compares two paths a character at a time in Python: the same prefix found by halving
      (slices compared in C)."""
    import snakemake.common
    import snakemake.common.prefix_lookup
    import snakemake.dag
    import snakemake.io
    import snakemake.jobs
    import snakemake.persistence
    import snakemake.rules
    import snakemake.scheduling.job_scheduler as job_scheduler

    modules = (snakemake.io, snakemake.dag, snakemake.jobs, snakemake.rules, snakemake.persistence)
    original = snakemake.io.is_flagged
    if not hasattr(original, "full"):
        replace_everywhere(modules, "is_flagged", unflagged_at_once(original, snakemake.io._IOFile))
    original = snakemake.io.apply_wildcards
    if not hasattr(original, "full"):
        replace_everywhere(modules, "apply_wildcards", pattern_pieces_once(original, snakemake.io.WILDCARD_REGEX))
    dag = snakemake.dag.DAG
    if not hasattr(dag.check_directory_outputs, "full"):
        dag.check_directory_outputs = directory_outputs_by_parts(dag.check_directory_outputs)
    iofile = snakemake.io._IOFile
    if not hasattr(iofile.check, "full"):
        iofile.check = clean_paths_pass(iofile.check)
    lookup = snakemake.common.prefix_lookup.PrefixLookup
    if not hasattr(lookup._common_prefix, "full"):
        lookup._common_prefix = common_prefix_by_halves(lookup._common_prefix)
    first, second, third = gc.get_threshold()
    gc.set_threshold(first, second, max(third, RARE_FULL_COLLECTIONS))

    for module in (snakemake.common, snakemake.rules, snakemake.jobs):
        if not hasattr(module.get_function_params, "uncached"):
            module.get_function_params = remembered(module.get_function_params)
    scheduler = job_scheduler.JobScheduler
    if not hasattr(scheduler._free_resources, "full"):
        scheduler._free_resources = not_in_dry_runs(scheduler._free_resources)
    job = snakemake.jobs.Job
    if not hasattr(job.conda_env_spec.fget, "full"):
        job.conda_env_spec = property(rule_env_first(job.conda_env_spec.fget, snakemake.rules._NOT_CACHED))
    if not hasattr(job.log_info, "full"):
        job.shellcmd = property(shellcmd_once_per_record(job.shellcmd.fget))
        job.log_info = unseen_records_skipped(one_shellcmd_per_record(job.log_info))


# The job whose record Job.log_info is writing and its shell command once formatted (a list of
# the two; UNFORMATTED until asked), while it writes it.
RECORD_SHELLCMD = contextvars.ContextVar("genomon_smk_record_shellcmd", default=None)
UNFORMATTED = object()


def one_shellcmd_per_record(full):
    """Job.log_info with Job.shellcmd formatted at most once while it runs."""

    def log_info(job, *args, **kwargs):
        token = RECORD_SHELLCMD.set([job, UNFORMATTED])
        try:
            return full(job, *args, **kwargs)
        finally:
            RECORD_SHELLCMD.reset(token)

    log_info.full = full
    return log_info


# Per dry run (its DAG): the rules whose first job's record was built; None when records are shown.
RULES_RECORDED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def unseen_records_skipped(full):
    """Job.log_info, skipped in a dry run whose records no handler shows for every job but the
    first of its rule (RULES_RECORDED)."""

    def log_info(job, *args, **kwargs):
        dag = job.dag
        if dag.workflow.dryrun:
            if dag not in RULES_RECORDED:  # the handlers are set before the DAG is built
                manager = getattr(dag.workflow, "logger_manager", None)
                shown = manager is None or records_shown(manager)
                RULES_RECORDED[dag] = None if shown else set()
            recorded = RULES_RECORDED[dag]
            if recorded is not None:
                if job.rule.name in recorded:
                    return None
                recorded.add(job.rule.name)
        return full(job, *args, **kwargs)

    log_info.full = full
    return log_info


def records_shown(manager) -> bool:
    """Whether a handler of Snakemake's logger (its logger manager's) would show a job's record
    (JOB_INFO or SHELLCMD, logged at INFO): any handler at INFO or below but Snakemake's own and
    the standard library's stream and file handlers is taken to show them (a logger plugin may
    read every record), unless it says it does not (`shows_job_records`, this workflow's
    console); those show what their filters pass."""
    from snakemake.logging import ColorizingTextHandler
    from snakemake_interface_logger_plugins.common import LogEvent

    known = (ColorizingTextHandler, logging.StreamHandler, logging.FileHandler)
    handlers = []
    logger = manager.logger
    while logger is not None:
        handlers.extend(logger.handlers)
        logger = logger.parent if logger.propagate else None
    listener = manager.queue_listener
    if listener is not None:
        handlers.extend(listener.handlers)
    probes = []
    for event in (LogEvent.JOB_INFO, LogEvent.SHELLCMD):
        probe = logging.LogRecord(manager.logger.name, logging.INFO, __file__, 0, "", None, None)
        probe.event = event
        probes.append(probe)
    for handler in handlers:
        if isinstance(handler, logging.handlers.QueueHandler) and listener is not None:
            continue  # the plugins' handlers' transport: they are listed above
        shows = getattr(handler, "shows_job_records", None)
        if shows is False or handler.level > logging.INFO:
            continue
        if shows is None and type(handler) not in known:
            return True
        if any(handler.filter(probe) for probe in probes):
            return True
    return False


def shellcmd_once_per_record(full):
    """Job.shellcmd's getter, remembered for the job whose record is being written (an error:
    raised each time, nothing remembered)."""

    def shellcmd(job):
        record = RECORD_SHELLCMD.get()
        if record is None or record[0] is not job:
            return full(job)
        if record[1] is UNFORMATTED:
            record[1] = full(job)
        return record[1]

    shellcmd.full = full
    return shellcmd


# gc.set_threshold's third threshold while planning: a full collection after this many
# collections of the middle generation instead of Python's 10 (and only once the long-lived
# objects grew by a quarter, as before).
RARE_FULL_COLLECTIONS = 1000


def replace_everywhere(modules, name: str, quick) -> None:
    """Module attribute `name` replaced by `quick` in each module that holds quick.full by that
    name (Snakemake imports its helpers by name into other modules)."""
    for module in modules:
        if getattr(module, name, None) is quick.full:
            setattr(module, name, quick)


def unflagged_at_once(full, iofile_class):
    """snakemake.io.is_flagged, False at once for a plain str and for a file whose path is one
    (_IOFile.flags reads the path's flags: a str has none); an AnnotatedString, or a file whose
    path is one, answers from its flags dict as AnnotatedStringInterface.is_flagged does."""
    from snakemake.io import AnnotatedString

    def is_flagged(value, flag):
        path = value._file if type(value) is iofile_class else value
        kind = type(path)
        if kind is str:
            return False
        if kind is AnnotatedString:
            flags = path._flags
            return flag in flags and bool(flags[flag])
        return full(value, flag)

    is_flagged.full = full
    return is_flagged


def pattern_pieces_once(full, wildcard_regex):
    """snakemake.io.apply_wildcards with each pattern's literal pieces and wildcard names found
    once (PATTERN_PIECES): the same text as the regex's substitution, the same WildcardError for
    a wildcard the values lack. A pattern without "{" has no wildcard: returned as re.sub
    returns it (a plain str)."""
    from snakemake.exceptions import WildcardError

    def apply_wildcards(pattern, wildcards):
        if "{" not in pattern:
            return str(pattern)
        pieces = PATTERN_PIECES.get(pattern)
        if pieces is None:
            pieces = pattern_pieces(pattern, wildcard_regex)
            if len(PATTERN_PIECES) < PATTERN_PIECES_KEPT:
                PATTERN_PIECES[str(pattern)] = pieces
        literals, names = pieces
        if not names:
            return str(pattern)
        text = [literals[0]]
        for name, literal in zip(names, literals[1:]):
            try:
                value = wildcards[name]
            except KeyError as error:
                raise WildcardError(str(error)) from error
            text.append(str(value))
            text.append(literal)
        return "".join(text)

    apply_wildcards.full = full
    return apply_wildcards


# A workflow's file patterns (a few hundred): their pieces, and at most this many kept (a path
# with a brace made by an input function is not a pattern that comes back).
PATTERN_PIECES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
PATTERN_PIECES_KEPT = 10_000


def pattern_pieces(pattern: str, wildcard_regex) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A pattern's literal pieces (one more than its wildcards) and its wildcards' names."""
    literals, names, end = [], [], 0
    for match in wildcard_regex.finditer(pattern):
        literals.append(pattern[end : match.start()])
        names.append(match.group("name"))
        end = match.end()
    literals.append(pattern[end:])
    return tuple(literals), tuple(names)


def path_parts(path: str, cwd: str) -> tuple[str, ...]:
    """pathlib.Path(path).absolute().parts on a POSIX system: the root ("//" for exactly two
    leading slashes, as POSIX allows), then the names, without empty and "." ones."""
    if not path.startswith("/"):
        path = f"{cwd}/{path}"
    root = "//" if path.startswith("//") and not path.startswith("///") else "/"
    return (root, *(name for name in path.split("/") if name and name != "."))


def parts_key(path: str, cwd: str) -> str:
    """path_parts joined by NUL (no name holds one, and it sorts before every other character):
    these keys sort as the parts' tuples do, and a path inside another's directory has the
    other's key and a NUL at its start."""
    return "\0".join(path_parts(path, cwd))


def directory_outputs_by_parts(full):
    """DAG.check_directory_outputs on the outputs' path parts (parts_key: pathlib's order on
    POSIX) instead of Path objects: the same pairs compared, the same ChildIOException with the
    same Paths."""
    from snakemake.exceptions import ChildIOException

    def check_directory_outputs(dag):
        if os.name != "posix":
            return full(dag)
        cwd = os.getcwd()
        outputs = sorted({(parts_key(f, cwd), job) for job in dag.jobs for f in job.output})
        for (a, job_a), (b, job_b) in zip(outputs, outputs[1:]):
            if b.startswith(f"{a}\0") and job_a != job_b:
                raise ChildIOException(
                    parent=(pathlib.Path(*a.split("\0")), job_a), child=(pathlib.Path(*b.split("\0")), job_b)
                )

    check_directory_outputs.full = full
    return check_directory_outputs


def clean_paths_pass(full):
    """_IOFile.check, returning at once for a path (a str, flagged or not) that none of
    snakemake.io.check's warnings is about: not empty, no "./" or blank at its start, no blank at
    its end, no line break, no "//" (the double-slash warning's), no "{" (the illegal wildcard
    name warning's)."""
    from snakemake.io import AnnotatedString

    def check(file):
        path = file._file
        if (
            type(path) in (str, AnnotatedString)
            and path
            and path[0] != " "
            and path[-1] != " "
            and not path.startswith("./")
            and "\n" not in path
            and "//" not in path
            and "{" not in path
        ):
            return None
        return full(file)

    check.full = full
    return check


def common_prefix_by_halves(full):
    """PrefixLookup._common_prefix: the common prefix of two strings, one character shorter where
    one string starts with the other (what its loop returns), found by halving."""

    def _common_prefix(lookup, first, second):
        shorter = min(len(first), len(second))
        if not shorter:
            return full(lookup, first, second)
        low, high = 0, shorter
        while low < high:
            middle = (low + high + 1) // 2
            if first[:middle] == second[:middle]:
                low = middle
            else:
                high = middle - 1
        return first[: low - 1 if low == shorter else low]

    _common_prefix.full = full
    return _common_prefix


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
    state Reason.clear leaves, made again on the next read).
    The DAG keeps every edge's files twice (DAG.update_ adds each file to a set in
    DAG._dependencies[consumer][producer] and to an equal one in DAG.depending[producer]
    [consumer]; both are only ever changed together, by the same files, there and in
    DAG.replace_job): one set shared by both after DAG.update_.
    In a dry run (Workflow.dryrun), what a job makes lazily and a dry run only reads for the
    job's record is dropped (None: made again, the same, on the next read): the job's log and
    benchmark files and its output by path (made for every job by DAG.cache_job) after
    DAG.update_needrun, and after the job's record (the dry-run executor's printjob) also its
    params and resources (Job.log_info evaluates both for the shell command): 2-3 KB a job that
    a dry run kept to its end, the peak of a cohort's dry run."""
    import snakemake.dag
    import snakemake.executors.dryrun
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
    if not hasattr(rule.expand_input.full, "full"):
        rule.expand_input = shared_input_files(rule.expand_input)
    job = snakemake.jobs.Job
    if not hasattr(job.__init__, "full"):
        job.__init__ = shared_empty_sets(job.__init__)
    dag = snakemake.dag.DAG
    if not hasattr(dag.update_needrun, "full"):
        snakemake.dag.asyncio = AsyncioInTurn(snakemake.dag.asyncio)
        dag.update_needrun = leaner_needrun(dag.update_needrun)
    if not hasattr(dag.update_, "full"):
        dag.update_ = shared_edge_files(dag.update_)
    dry_run = snakemake.executors.dryrun.Executor
    if not hasattr(dry_run.printjob, "full"):
        dry_run.printjob = dropped_once_printed(dry_run.printjob)


def same_file(file, other) -> bool:
    """Whether two equal paths are the same file to Snakemake: the same kind of object, path
    text and flags (a file of one rule's jobs: the same template)."""
    return (
        type(file) is type(other)
        and type(getattr(file, "_file", None)) is type(getattr(other, "_file", None))
        and getattr(file, "_is_callable", False) is getattr(other, "_is_callable", False) is False
        and str.__eq__(file, other)
        and file.flags == other.flags
    )


# In a dry run, the DAG's edge sets and the jobs' input files that equal another job's of the
# same rule (every map job's reference and region table, a sample's chunks for its 64 map jobs,
# its regions for its markdups): one object for all, while the DAG is built (EDGE_FILES,
# INPUT_FILES; emptied by DAG.update_needrun once it is).
EDGE_FILES: dict = {}
INPUT_FILES: dict = {}


def shared_edge_files(full):
    """DAG.update_(job, ...), then each of the job's edges keeps one set of files: the set in
    DAG._dependencies[job][producer] also in DAG.depending[producer][job] (equal sets, both
    changed only together with the same files). In a dry run also one set for the edges of a
    rule's jobs to one file of the same producer (EDGE_FILES: after DAG.update_ added a job's
    edges nothing adds to them; DAG.replace_job makes new sets)."""

    async def update_(dag, job, *args, **kwargs):
        if job in dag._dependencies:  # added before: DAG.update_ returns at once
            return await full(dag, job, *args, **kwargs)
        result = await full(dag, job, *args, **kwargs)
        edges = dag._dependencies.get(job)
        if edges:
            depending = dag.depending
            dry_run = dag.workflow.dryrun
            for producer, files in edges.items():
                if dry_run and len(files) == 1:
                    (file,) = files
                    known = EDGE_FILES.setdefault((job.rule.name, producer, file), files)
                    if known is not files and same_file(next(iter(known)), file):
                        edges[producer] = files = known
                consumers = depending.get(producer)
                if consumers is not None:
                    same = consumers.get(job)
                    if same is not None and same is not files and same == files:
                        consumers[job] = files
        return result

    update_.full = full
    return update_


def shared_input_files(full):
    """Rule.expand_input, then in a dry run each input file equal to one of an earlier job of
    the rule (same_file) replaced by that one, in the list, its names and the job's
    dependencies by file (the files are only read once made)."""

    def expand_input(rule, *args, **kwargs):
        result = full(rule, *args, **kwargs)
        files, mapping, depends, incomplete = result
        if incomplete or not rule.workflow.dryrun:
            return result
        known = INPUT_FILES.setdefault(rule.name, {})
        replaced = {}
        for index, file in enumerate(files):
            shared = known.setdefault(file, file)
            if shared is not file and same_file(shared, file):
                list.__setitem__(files, index, shared)
                replaced[file] = shared
        if not replaced:
            return result
        for name, (start, end) in files._names.items():
            if end is None:
                setattr(files, name, files[start])
            else:
                named = getattr(files, name)
                for offset in range(len(named)):
                    list.__setitem__(named, offset, files[start + offset])
        if depends:
            depends = {replaced.get(file, file) if file is not None else None: r for file, r in depends.items()}
        return files, mapping, depends, incomplete

    expand_input.full = full
    return expand_input


# What a job makes lazily (Job.log, .benchmark, .output_by_path, .params, .resources), dropped
# in a dry run when only the job's record reads it again.
FILES_MADE_LAZILY = ("_log", "_benchmark", "_output_by_path")
EVALUATED_FOR_RECORD = ("_params", "_non_derived_params", "_resources")


def drop_lazy(job, names):
    for name in names:
        setattr(job, name, None)


def dropped_once_printed(full):
    """The dry-run executor's printjob, then the printed job's (a group's jobs') lazily made
    files, params and resources dropped."""

    def printjob(executor, job):
        full(executor, job)
        for single in job.jobs if job.is_group() else (job,):
            drop_lazy(single, FILES_MADE_LAZILY + EVALUATED_FOR_RECORD)

    printjob.full = full
    return printjob


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
    empty sets of every job's Reason (REASON_SETS, lazy properties) dropped, and in a dry run
    every job's lazily made files (FILES_MADE_LAZILY)."""

    async def update_needrun(dag, *args, **kwargs):
        EDGE_FILES.clear()
        INPUT_FILES.clear()
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
        if dag.workflow.dryrun:
            for job in dag.jobs:
                drop_lazy(job, FILES_MADE_LAZILY)
        return result

    update_needrun.full = full
    return update_needrun
