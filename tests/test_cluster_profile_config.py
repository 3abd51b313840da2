"""A cluster profile's config value `cluster` (profiles/pjm: `config: {cluster: pjm}`) puts that
profile's storage fragment under the user's config (workflow/rules/config.smk): the fragment fills
what the user did not set, the user's keys win."""

from pathlib import Path

import yaml

from genomon_smk.plan.config_check import cluster_fragment, underlay

PROFILES = Path(__file__).resolve().parents[1] / "profiles"


def test_the_pjm_profile_names_its_cluster_and_has_a_fragment():
    profile = yaml.safe_load((PROFILES / "pjm" / "config.v8+.yaml").read_text())
    assert profile["executor"] == "pjm" and profile["config"] == {"cluster": "pjm"}
    fragment = cluster_fragment("pjm", str(PROFILES))
    assert fragment == str(PROFILES / "pjm" / "storage.yaml")
    storage = yaml.safe_load(Path(fragment).read_text())["storage"]
    assert storage["reference_staging"] == "llio_transfer" and storage["paths"]["node_local"] == "$PJM_LOCALTMP"


def test_no_fragment_for_other_or_odd_names():
    assert cluster_fragment("slurm", str(PROFILES)) is None  # no profiles/slurm/storage.yaml
    for name in (None, "", "..", "../pjm", "pjm/..", 3):
        assert cluster_fragment(name, str(PROFILES)) is None, name


def test_the_users_config_wins_key_by_key():
    fragment = {"storage": {"paths": {"node_local": "$PJM_LOCALTMP"}, "reference_staging": "llio_transfer"}}
    user = {"output_dir": "out", "storage": {"paths": {"shared_tmp": "/scratch/x"}, "reference_staging": "copy"},
            "cluster": "pjm"}
    assert underlay(fragment, user) == {
        "output_dir": "out", "cluster": "pjm",
        "storage": {"paths": {"node_local": "$PJM_LOCALTMP", "shared_tmp": "/scratch/x"}, "reference_staging": "copy"}}
    assert underlay(fragment, {}) == fragment and underlay({}, user) == user
    assert fragment["storage"]["paths"] == {"node_local": "$PJM_LOCALTMP"}  # inputs untouched
