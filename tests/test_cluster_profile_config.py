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


def test_the_pjm_plugins_failure_kinds_are_what_the_retries_read():
    """Every end the PJM plugin judges (on the captured Fugaku-layout and emulator listings) is
    classified by genomon_smk.runtime.retries as the resource it was short of, a node failure,
    or no retry."""
    from snakemake_executor_plugin_pjm.pjm import judge, parse_pjstat

    from genomon_smk.runtime.retries import classify

    data = Path(__file__).resolve().parents[1] / "plugins" / "snakemake-executor-plugin-pjm" / "tests" / "data"
    ends = {}
    for listing in ("fugaku-history.txt", "history-v.txt"):
        for job, row in parse_pjstat((data / listing).read_text()).items():
            end = judge(job, row)
            if not end.success:
                ends.setdefault(end.kind, []).append(end)
    expected = {"elapse": ({"runtime"}, False), "memory": ({"mem_mb"}, False), "node": (set(), True),
                "exit": (set(), False), "cancelled": (set(), False), "system": (set(), False),
                "rejected": (set(), False)}
    assert set(ends) == set(expected)
    for kind, found in ends.items():
        for end in found:
            failure = classify(end.reason, end.kind)
            assert (set(failure.short_of), failure.node) == expected[kind], end.reason
    disk = judge("9", {"ST": "EXT", "EC": "137", "PC": "13", "SN": "9"})
    assert disk.kind == "disk" and set(classify(disk.reason, disk.kind).short_of) == {"pjm_localtmp"}


def test_a_pjm_memory_kill_is_retried_with_more_memory_only_where_pjsub_gets_it():
    """The executor's message of a memory kill: with --pjm-node-mem (pjsub -L node-mem= from
    mem_mb) the retry policy grows mem_mb; without it the node's memory is fixed, and the retry
    policy stops the retry (the message says why); other kinds are worded alike either way."""
    from snakemake_executor_plugin_pjm.pjm import failure_message, judge, retry_advice

    from genomon_smk.runtime.retries import classify, pjm_fixed

    def retried(end, node_mem):
        # The plugin's failure record as record_failure writes it: its kind and whether a retry can help.
        grow, why_not = retry_advice(end, node_mem)
        record = {"kind": end.kind, "grow": grow, "retry": why_not is None}
        return classify(failure_message(end, node_mem, logs), end.kind, "", pjm_fixed(record))

    logs = ["/w/pjm-logs/map_reads/smk-map_reads.7.out", "/w/pjm-logs/map_reads/smk-map_reads.7.err"]
    for code in ("12", "23"):
        end = judge("7", {"ST": "EXT", "EC": "137", "PC": code, "SN": "9"})
        fixed = retried(end, node_mem=False)
        assert not fixed.retried and "memory cannot grow on this cluster" in fixed.reported
        assert "/w/pjm-logs/map_reads/smk-map_reads.7.out" in fixed.reported
        assert set(retried(end, node_mem=True).short_of) == {"mem_mb"}
    elapse = judge("8", {"ST": "EXT", "EC": "137", "PC": "11", "SN": "9"})
    assert set(retried(elapse, node_mem=False).short_of) == {"runtime"}
