"""The workflow used as a Snakemake module, the way catalog workflows are deployed: a user's own
Snakefile in a project directory of its own, `module genomon: snakefile: <checkout>/workflow/Snakefile`
and `use rule * from genomon`. Nothing may resolve against the user's directory that only the
checkout has (schemas, job scripts, the SV tools' venv): the dry run plans the cohort the direct
way plans, and a small real target runs its job through the job scripts."""

import pytest

from conftest import REPO, job_stats, run_snakemake, write_config
from genomon_smk.runtime.run_lock import lock_text, this_process

USER_SNAKEFILE = f"""\
configfile: "config.yaml"


module genomon:
    snakefile:
        "{REPO}/workflow/Snakefile"
    config:
        config


use rule * from genomon
"""


@pytest.mark.workflow
def test_a_users_snakefile_runs_the_workflow_as_a_module(tmp_path, testdata):
    project = tmp_path / "project"
    config = write_config(project, testdata)
    (project / "Snakefile").write_text(USER_SNAKEFILE)
    (project / "profiles").symlink_to(REPO / "profiles", target_is_directory=True)
    dry = run_snakemake(config, "-n", "--quiet", "rules", cwd=project)
    planned = job_stats(dry.stdout + dry.stderr)
    # The .test cohort (5 samples, the pair and the panel) planned as the direct way plans it.
    assert planned["split_fastq"] == 5 and planned["identify_mutations"] > 0 and planned["sv_filt"] == 1
    assert "Stage plan:" in dry.stderr
    # Snakemake's planning is patched process-wide: left alone for the host workflow (no opt-in).
    assert "as a module of another workflow, Snakemake's planning is left unpatched" in dry.stderr
    # A run held by another live process on this host is refused (the run's onstart hook, which
    # Snakemake drops from a module: the workflow adds it to the user's).
    lock = project / "results" / ".genomon-smk.lock"
    lock.parent.mkdir(parents=True)
    lock.write_text(lock_text(this_process(str(tmp_path))))  # this test's process: alive
    refused = run_snakemake(config, "region_table", cwd=project, check=False)
    assert refused.returncode != 0 and "a run holds this output directory" in refused.stdout + refused.stderr
    assert not (project / "results" / "regions.tsv").exists()
    lock.unlink()
    ran = run_snakemake(config, "region_table", cwd=project)
    regions = project / "results" / "regions.tsv"
    assert regions.read_text().count("\n") > 1
    assert (project / "results" / "logs" / "region_table" / "regions.log").exists()
    # ... and its onsuccess hook: the lock released, the closing summary printed.
    assert not lock.exists() and "genomon-smk: the results are in" in ran.stdout + ran.stderr
