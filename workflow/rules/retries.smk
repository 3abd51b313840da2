"""Retries that grow what a job was short of (genomon_smk.plan.retries): included after every
rule, whose resources it wraps."""

import logging

from genomon_smk.plan.retries import Attempts, FailureHandler, grow_on_retry

RETRY_ATTEMPTS = Attempts()
grow_on_retry(workflow, RETRY_ATTEMPTS)
# Snakemake's job error records (its logger's `extra`), as they are logged: the Snakemake
# process reads why each job failed before it resubmits the job.
logging.getLogger("snakemake.logging").addHandler(FailureHandler(RETRY_ATTEMPTS))
