"""Retries that grow what a job was short of (genomon_smk.runtime.retries): included after every
rule, whose resources it wraps."""

from genomon_smk.runtime.retries import Attempts, grow_on_retry, watch_failures

RETRY_ATTEMPTS = Attempts()
# (only this workflow's rules: as a module, the host's own rules keep their resources)
# (included alone, as tests/test_slurm.py does, every rule of the Snakefile)
grow_on_retry(workflow, RETRY_ATTEMPTS, globals().get("WORKFLOW_DIR"))
# Snakemake's job error records, as they are logged: the Snakemake process reads why each job
# failed before it resubmits the job.
watch_failures(workflow, RETRY_ATTEMPTS)
