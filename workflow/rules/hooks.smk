"""What a run does first and last (Snakemake's onstart, onsuccess and onerror, which dry runs and
cluster jobs do not run): the output directory's lock, the tier monitor and the reference
staging, and the closing summaries. As a module of a user's Snakefile too, where Snakemake keeps
only the user's hooks."""

from genomon_smk.plan.input_identity import record_inputs


def keep_setup_links():
    """At the start of a run (not a dry run): the directories of the project's links to shared
    builds, which keep later parses on the links (setup_build.shared_in_place), a cluster job's
    own parse included, which may come after another project completed the build."""
    for linked in (REFERENCE_PLAN, SIMPLE_REPEAT):
        if linked is not None and linked.link_directory:
            os.makedirs(linked.link_directory, exist_ok=True)


def refuse_a_cluster_run_planned_as_local():
    """The executor is known only once the run starts (a dry run plans with config `cluster`):
    jobs about to go to a cluster with a local run's threads and tiers are refused here.
    """
    problem = snakemake_adapter.cluster_mismatch(
        CLUSTER, snakemake_adapter.executor_name(workflow)
    )
    if problem:
        raise WorkflowError(problem)


# The executor's check and the output directory's lock first: a run refused there touches nothing.
def at_start():
    refuse_a_cluster_run_planned_as_local()
    take_run_lock()
    record_inputs(INPUTS_RECORD, INPUTS_HELD)
    keep_setup_links()
    report_scratch_leftovers("at the start of this run, from an earlier one")
    TIER_MONITOR.start()
    transfer_reference_at_start()


def at_success():
    RETRY_ATTEMPTS.forget()
    report_tier_usage()
    purge_staged_reference()
    release_run_lock()
    print_run_summary()
    snakemake_adapter.end_promptly()


def at_error():
    report_scratch_leftovers("after this failed or stopped run")
    purge_staged_reference()
    release_run_lock()
    print_failure_summary()
    snakemake_adapter.end_promptly()


onstart:
    at_start()


onsuccess:
    at_success()


onerror:
    at_error()


# As a module of a user's Snakefile, Snakemake keeps only the user's hooks: ours are added to them.
if snakemake_adapter.is_module(workflow):
    snakemake_adapter.add_hooks(
        workflow, onstart=at_start, onsuccess=at_success, onerror=at_error
    )
