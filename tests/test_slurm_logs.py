"""profiles/slurm's job logs: the official Slurm plugin's own settings delete a successful job's
Slurm log and keep a failed job's, and do not age failed jobs' logs away (the plugin's default
deletes every log older than 10 days). The settings exist in the pinned plugin with these names."""

import dataclasses
from pathlib import Path

import yaml

from snakemake_executor_plugin_slurm import ExecutorSettings

PROFILE = yaml.safe_load((Path(__file__).resolve().parents[1] / "profiles" / "slurm" / "config.v8+.yaml").read_text())


def test_successful_logs_go_failed_logs_stay():
    assert PROFILE["slurm-keep-successful-logs"] is False
    assert PROFILE["slurm-delete-logfiles-older-than"] == 0


def test_the_pinned_plugin_has_these_settings():
    fields = {field.name: field for field in dataclasses.fields(ExecutorSettings)}
    for key in ("slurm-keep-successful-logs", "slurm-delete-logfiles-older-than"):
        assert key.removeprefix("slurm-").replace("-", "_") in fields, key
    # The plugin's own defaults, which the profile states (keep) or changes (age) on purpose.
    assert fields["keep_successful_logs"].default is False
    assert fields["delete_logfiles_older_than"].default == 10
