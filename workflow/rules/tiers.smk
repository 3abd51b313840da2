"""Storage tiers: where each rule's files and each job's work directory go, the monitor of the
tiers' use, and the reference pre-staging of a run (its hooks run in the Snakefile)."""

import hashlib

from genomon_smk.runtime import job_tier_use
from genomon_smk.plan.reference import reference_files
from genomon_smk.runtime.tier_monitor import (
    TierMonitor,
    leftover_report,
    write_leftovers,
)
from genomon_smk.steps.reference_cache import main as reference_cache_main

# Storage tiers. Files that pass between jobs live on a tier with a path known when the
# workflow is planned (shared_tmp, cache, global); node_local exists only inside one job, so
# its path is handed to the job's shell and expanded there ($TMPDIR, $PJM_LOCALTMP, ...).
# A configured node_local or cache place with $VARIABLES is expanded by each job's shell.
EXPANDED_BY_JOB = {
    tier
    for tier in ("node_local", "cache")
    if "$" in (config["storage"]["paths"][tier] or "")
}


def tier_paths():
    paths = config["storage"]["paths"]
    under_run = f"{OUTPUT_DIR}/.tiers"
    return {
        "global": OUTPUT_DIR,
        "shared_tmp": (
            config_path(paths["shared_tmp"])
            if paths["shared_tmp"]
            else f"{under_run}/shared_tmp"
        ),
        "cache": paths["cache"] or f"{under_run}/cache",
        "node_local": paths["node_local"] or f"{under_run}/node_local",
    }


TIER_PATHS = tier_paths()
# Each tier's place as one word of a job's shell: double-quoted as given where the job's shell
# expands it, quoted literally everywhere else (spaces, quotes, `$` in a directory name).
TIER_WORDS = {
    tier: f'"{place}"' if tier in EXPANDED_BY_JOB else shlex.quote(place)
    for tier, place in TIER_PATHS.items()
}
TIER_PATH_PROBLEMS = [
    problem
    for tier in ("shared_tmp", "cache", "node_local")
    for problem in path_problems(
        f"storage.paths.{tier}", TIER_PATHS[tier], tier in EXPANDED_BY_JOB
    )
]
# Refused with the config's other problems (rules/config.smk, refuse_if_any).
REFUSALS.extend(TIER_PATH_PROBLEMS)
RULE_TIERS = config["storage"]["rules"]
for rule_name, roles in RULE_TIERS.items():
    if roles["output"] == "node_local":
        REFUSALS.append(
            config_key_problem(
                ("storage", "rules", rule_name, "output"),
                "node_local cannot hold files that another job reads "
                "(it exists on one node for one job); use shared_tmp, cache or global",
            )
        )


def tier_dir(rule_name, role="output"):
    """Where a rule's files of a role (output or temp) go, by the tier the config assigns."""
    return TIER_PATHS[RULE_TIERS[rule_name][role]]


def tier_file(rule_name, path):
    """A rule's output file on its output tier (its first directory is the workflow's: the
    leftovers report tells it from the user's files in the same place)."""
    TIER_MONITOR.own_dirs.add(path.split("/")[0])
    return os.path.join(tier_dir(rule_name), path)


# storage.monitor: null = on for a local run only (config `cluster`, which the cluster profiles
# set); on a cluster the sampling would be metadata load on shared file systems.
STORAGE_MONITOR = (
    config["storage"]["monitor"]
    if config["storage"]["monitor"] is not None
    else config.get("cluster") in (None, "local")
)
TIER_MONITOR = TierMonitor(dict(TIER_PATHS), enabled=STORAGE_MONITOR)
# For job-work-dir.sh in every job's shell (each job's own Snakemake sets it from the same config).
# Not a param: turning the monitor on or off must not rerun the jobs.
os.environ.update(GENOMON_SMK_STORAGE_MONITOR="1" if STORAGE_MONITOR else "0")
# Names the job work directories of this output directory apart from other runs on a tier.
RUN_KEY = hashlib.md5(OUTPUT_DIR.encode()).hexdigest()[:8]


def work_dir_setup(rule_name, tier=None):
    """For a rule, the command each of its jobs runs first (`{params.work_dir_setup} {log:q}`):
    it makes the job's own empty work directory, $work, on the rule's temp tier (storage.rules;
    `tier` for a rule without one) with job-work-dir.sh, which removes it when the job's shell
    exits, and which samples its size while the job runs when storage.monitor is on. The
    directory is the same on every attempt: a job killed with SIGKILL (which skips the shell's
    EXIT trap) leaves it behind, and the rerun clears it. Its path is a word for the job's
    shell, which expands $TMPDIR or $PJM_LOCALTMP on its node: never a path in the Snakemake
    process (nor anything to put in quotes).
    """
    tier = tier or RULE_TIERS[rule_name]["temp"]

    def setup(wildcards):
        name = ".".join(
            [rule_name, RUN_KEY, *(value for _, value in sorted(wildcards.items()))]
        )
        place = f"{TIER_WORDS[tier]}/{shlex.quote(name)}"
        # $genomon_scripts: set by job-shell.sh (the shell prefix); no checkout path in params.
        return f'source "$genomon_scripts/job-work-dir.sh" {place} {tier}'

    return setup


JOB_SHELL_SCRIPT = f"{WORKFLOW_DIR}/scripts/job-shell.sh"
# Genomon's SV tools (rules/sv_paths.smk), installed in the checkout by bin/install.
SV_TOOLS_DIR = WORKFLOW_DIR.parent / ".venv-sv" / "bin"


def job_shell_prefix(planned_peaks):
    """What every job's shell runs first (Snakemake's shell prefix): bash's strict mode, as
    Snakemake's own prefix, and job-shell.sh, whose EXIT trap names each tier out of space when
    the job fails, with the storage plan's peak for it (planned_peaks, bytes per tier).
    """
    tiers = " ".join(
        f"{tier} {shlex.quote(TIER_WORDS[tier])} {int(planned_peaks[tier])}"
        for tier in TIER_PATHS
    )
    # The interpreter's and the checkout's paths are here, never in a rule's params or code
    # (Snakemake does not record the prefix): the rules reach them through job-shell.sh.
    prefix = (
        f"set -euo pipefail; genomon_sv_bin={shlex.quote(str(SV_TOOLS_DIR))};"
        f" genomon_bin={shlex.quote(os.path.dirname(sys.executable))};"
        f" genomon_resources={shlex.quote(RESOURCES_DIR)};"
        f" source {shlex.quote(JOB_SHELL_SCRIPT)} {shlex.quote(PYTHON)} {tiers};"
    )
    # Snakemake formats the prefix once: braces are literal here.
    return prefix.replace("{", "{{").replace("}", "}}")


def transfer_reference_at_start():
    """With llio_transfer staging and Snakemake inside a PJM job (profiles/pjm-allocation): one
    llio_transfer of the reference for the whole run, before any job; the jobs of this PJM job
    then skip theirs. Outside PJM (per-rule jobs, submitted from a login node) it does nothing.
    """
    if config["storage"]["reference_staging"] != "llio_transfer":
        return
    files = reference_files(REFERENCE)
    if not all(os.path.exists(path) for path in files):
        print(
            "stage: the reference is built by this run's set-up jobs; each job that reads it "
            "llio_transfers it (the next run transfers it once at its start)",
            file=sys.stderr,
        )
        return
    try:
        reference_cache_main(["start", "--manifest", STAGED_MANIFEST, *files])
    except OSError as error:
        raise WorkflowError(f"stage: llio_transfer of the reference failed: {error}")


def purge_staged_reference():
    """With llio_transfer staging, purge the reference from the LLIO cache at the end of a run.
    Only possible inside a PJM job (Snakemake run inside one allocation); per-rule PJM jobs'
    LLIO caches ended with the jobs, and stage.py's purge then just says so."""
    if config["storage"]["reference_staging"] != "llio_transfer" or not os.path.exists(
        STAGED_MANIFEST
    ):
        return
    try:
        reference_cache_main(
            ["purge", "--method", "llio_transfer", "--manifest", STAGED_MANIFEST]
        )
    except OSError as error:
        print(f"stage: purging the reference failed: {error}", file=sys.stderr)


def report_tier_usage():
    """At the end of a successful run: the measured tier use (log and TSV), and any leftovers."""
    table, _ = TIER_MONITOR.finish(f"{OUTPUT_DIR}/storage/tier_usage.tsv")
    print(table, file=sys.stderr)
    job_uses = job_tier_use.collect(LOG_DIR) if STORAGE_MONITOR else []
    job_tier_use.write_tsv(job_uses, f"{OUTPUT_DIR}/storage/job_tier_use.tsv")
    print(job_tier_use.table(job_uses, measured=STORAGE_MONITOR), file=sys.stderr)
    report_scratch_leftovers("after a successful run")


def report_scratch_leftovers(when):
    """What lies on node_local/shared_tmp (the places visible from here) to the log and
    storage/scratch_leftovers.tsv: after a run, and at the start of one (a killed run reports
    nothing itself): genomon_smk.runtime.tier_monitor tells how the rerun copes."""
    tsv = f"{OUTPUT_DIR}/storage/scratch_leftovers.tsv"
    leftovers = TIER_MONITOR.leftovers(RUN_KEY)
    write_leftovers(leftovers, tsv, when)
    if leftovers:
        print(leftover_report(leftovers, when, tsv), file=sys.stderr)
