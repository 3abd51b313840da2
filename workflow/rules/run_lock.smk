"""One run per output directory: Snakemake's own lock is in the working directory, so runs
started from two directories on the same output_dir would both start (genomon_smk.runtime.run_lock).
"""

import atexit

from genomon_smk.runtime import run_lock

# One run per output directory (run_lock.py): Snakemake's own lock is in the working directory.
RUN_LOCK = os.path.join(OUTPUT_DIR, run_lock.LOCK_NAME)
THIS_RUN = run_lock.this_process(os.getcwd())
# Every start, a dry run too, says who holds the output directory. A run proven gone (killed, on
# this host) leaves Snakemake's locks too: removed, so that the same command resumes.
if MAIN_PROCESS:
    resumed = run_lock.clear_locks_of_dead_run(RUN_LOCK, OUTPUT_DIR, THIS_RUN.host)
    if resumed:
        print(resumed, file=sys.stderr)
    held = run_lock.held_note(RUN_LOCK, THIS_RUN.host)
    if held:
        print(held, file=sys.stderr)


def take_run_lock():
    """From onstart, so only in the main process of a real run (dry runs and cluster jobs run no
    hooks): lock the output directory, or refuse while another run holds it."""
    if not MAIN_PROCESS:
        return
    os.makedirs(OUTPUT_DIR, exist_ok=True)
    taken, message = run_lock.acquire(RUN_LOCK, THIS_RUN)
    if not taken:
        raise WorkflowError(message)
    if message:
        print(message, file=sys.stderr)
    # However Snakemake ends: an exception in its scheduler runs neither onsuccess nor onerror.
    atexit.register(release_run_lock)


def release_run_lock():
    run_lock.release(RUN_LOCK, THIS_RUN)


def unlock_output_dir_too(snakemake_unlock):
    """`snakemake --unlock` reads the workflow, then calls workflow.unlock() (Snakemake 9 has no
    setting the workflow could read at parse time for it): clear the output directory's lock
    too, but neither lock while the run that holds ours is alive on this host."""

    def unlock():
        if run_lock.alive_here(RUN_LOCK, THIS_RUN.host):
            print(run_lock.clear(RUN_LOCK, THIS_RUN.host), file=sys.stderr)
            return
        snakemake_unlock()
        print(
            run_lock.clear(RUN_LOCK, THIS_RUN.host)
            or f"genomon-smk: {RUN_LOCK} was not there",
            file=sys.stderr,
        )

    return unlock


if MAIN_PROCESS:
    snakemake_adapter.wrap_unlock(workflow, unlock_output_dir_too)
