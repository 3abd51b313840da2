"""The plugin's PJM side on captured outputs: tests/data holds pjsub/pjstat outputs captured from
the PJM emulator of genomon-smk (.test/pjm, Fugaku's formats: emulator-*), and listings written
after the layouts of the Fugaku user guide (fugaku-*: a summary block before the header,
right-aligned columns of other widths, a forecast date in parentheses, a bulk job id)."""

import asyncio
import time
from pathlib import Path

import pytest

from snakemake_executor_plugin_pjm.pjm import (
    MEMORY_FIXED,
    StatusRounds,
    accept_budget,
    elapse,
    installed_versions,
    job_exec_prefix,
    job_name,
    judge,
    log_dir_of,
    log_files,
    parse_limits,
    parse_pjstat,
    refused_for_limit,
    retry_advice,
    run_command,
    submit_command,
    submitted_job_id,
    venv_of,
    version_mismatches,
)

DATA = Path(__file__).parent / "data"


def data(name):
    return (DATA / name).read_text()


def test_job_id_from_the_banner_or_a_bare_id():
    assert submitted_job_id(data("banner.txt")) == "1"
    assert submitted_job_id(data("zjid.txt")) == "2"  # pjsub -z jid
    assert submitted_job_id("[INFO] PJM 0000 pjsub Job 20421338[1] submitted.\n") == "20421338[1]"
    assert submitted_job_id(data("bad-llio.err")) is None
    assert submitted_job_id("") is None


def test_listings_parsed_by_header_with_two_word_dates():
    current = parse_pjstat(data("current-v.txt"))
    assert list(current) == ["4", "5", "6", "7"]
    assert current["4"]["ST"] == "RUN" and current["4"]["START_DATE"] == "11/26_03:40:32"
    assert current["6"]["START_DATE"] == "-" and current["6"]["RSC_GRP"] == "small"
    plain = parse_pjstat(data("current.txt"))  # without -v: no codes, same ids and states
    assert {job: row["ST"] for job, row in plain.items()} == {job: row["ST"] for job, row in current.items()}
    ended = parse_pjstat(data("history-v.txt"))
    assert {job: (row["ST"], row["EC"], row["PC"], row["SN"]) for job, row in ended.items()} == {
        "1": ("EXT", "0", "0", "-"), "2": ("EXT", "3", "0", "-"), "3": ("EXT", "137", "11", "9"),
        "5": ("CCL", "-", "1", "9"), "6": ("CCL", "-", "1", "-")}
    assert list(parse_pjstat(data("history-v-ids.txt"))) == ["1", "3", "6"]


def test_fugaku_layout_summary_block_forecast_date_and_bulk_id():
    rows = parse_pjstat(data("fugaku-layout.txt"))
    assert list(rows) == ["20421337", "20421338[1]", "20421339"]
    assert rows["20421338[1]"]["START_DATE"] == "(11/17_10:30)"
    assert [row["ST"] for row in rows.values()] == ["RUN", "QUE", "RNO"]
    assert all(row["RSC_GRP"] == "small" and row["REASON"] == "-" for row in rows.values())
    assert all(judge(job, row) is None for job, row in rows.items())  # all still current


def test_a_short_row_gets_dashes_and_extra_words_go_to_the_last_column():
    rows = parse_pjstat("JOB_ID ST EC PC REASON\n7 EXT 1\n8 EXT 1 0 some words here\n")
    assert rows["7"] == {"JOB_ID": "7", "ST": "EXT", "EC": "1", "PC": "-", "REASON": "-"}
    assert rows["8"]["REASON"] == "some words here"
    assert parse_pjstat("") == {} and parse_pjstat("pjstat: error\n") == {}


@pytest.mark.parametrize("job, success, kind, words", [
    ("1", True, "", ""),
    ("2", False, "exit", "job script exit code 3"),
    ("3", False, "elapse", "elapse limit exceeded"),
    ("5", False, "cancelled", "cancelled by pjdel"),
    ("6", False, "cancelled", "cancelled by pjdel"),
])
def test_emulator_end_codes(job, success, kind, words):
    end = judge(job, parse_pjstat(data("history-v.txt"))[job])
    assert (end.success, end.kind) == (success, kind)
    assert end.reason.startswith(f"PJM job {job} failed: {words} (ST ") if words else end.reason == ""


def test_elapse_message_names_state_and_codes():
    end = judge("3", parse_pjstat(data("history-v.txt"))["3"])
    assert end.reason == ("PJM job 3 failed: elapse limit exceeded "
                          "(ST EXT, PJM CODE 11, EXIT CODE 137, SIGNAL 9, REASON ELAPSE_LIMIT)")
    assert end.codes["PC"] == "11"


@pytest.mark.parametrize("job, kind, words", [
    ("20421301", "elapse", "elapse limit exceeded"),
    ("20421302", "memory", "memory limit exceeded"),
    ("20421303", "memory", "killed by the OOM killer"),
    ("20421304", "node", "node down"),
    ("20421306", "system", "working directory or stdin/stdout/stderr file not accessible"),
    ("20421307", "rejected", "rejected at submission"),
])
def test_fugaku_end_codes(job, kind, words):
    end = judge(job, parse_pjstat(data("fugaku-history.txt"))[job])
    assert not end.success and end.kind == kind and f"failed: {words} (ST " in end.reason


def test_fugaku_success():
    assert judge("20421305", parse_pjstat(data("fugaku-history.txt"))["20421305"]).success


def test_submit_command():
    resources = {"runtime": 90, "pjm_rscgrp": "small", "pjm_group": "", "pjm_localtmp": "16Gi", "mem_mb": 1000}
    command = submit_command("/w/.snakemake/tmp.x/snakejob.map.3.sh", "smk-map_reads", resources, "/w/logs")
    assert command == ["pjsub", "-X", "-N", "smk-map_reads", "-L", "node=1", "-L", "elapse=1:30:00",
                       "-L", "rscgrp=small", "--llio", "localtmp-size=16Gi",
                       "-o", "/w/logs/smk-map_reads.%j.out", "-e", "/w/logs/smk-map_reads.%j.err",
                       "/w/.snakemake/tmp.x/snakejob.map.3.sh"]
    assert log_files("/w/logs", "smk-map_reads", "12") == ["/w/logs/smk-map_reads.12.out",
                                                          "/w/logs/smk-map_reads.12.err"]
    more = submit_command("job.sh", "smk-x", {"nodes": 2, "pjm_group": "hp123456", "pjm_localtmp": "1Gi",
                                              "pjm_sharedtmp": "4Gi", "pjm_extra": "-x PJM_LLIO_GFSCACHE=/vol0004"},
                          "/l")
    assert more[:6] == ["pjsub", "-X", "-N", "smk-x", "-L", "node=2"]
    assert "elapse" not in " ".join(more) and "rscgrp" not in " ".join(more)  # the site's defaults
    assert more[6:12] == ["-g", "hp123456", "--llio", "localtmp-size=1Gi,sharedtmp-size=4Gi",
                          "-x", "PJM_LLIO_GFSCACHE=/vol0004"]


def test_elapse_and_job_name():
    assert [elapse(m) for m in (1, 60, 61, 1440, 0.5)] == ["0:01:00", "1:00:00", "1:01:00", "24:00:00", "0:00:30"]
    assert job_name("map_reads") == "smk-map_reads"
    assert job_name("group 1/a") == "smk-group_1_a"


class FakePjstat:
    """pjstat answering from listings (None: the call failed), counting calls."""

    def __init__(self, current, history=""):
        self.current, self.history, self.calls = current, history, []

    async def __call__(self, args):
        self.calls.append(args)
        return self.history if "-H" in args else self.current


def check(rounds, ids):
    return asyncio.run(rounds.check(ids))


def listing(states):
    header = "JOB_ID  JOB_NAME  ST   START_DATE      EC  PC  SN\n"
    return header + "".join(f"{job}  smk-x  {st}  11/26 03:40:32  {ec}  {pc}  -\n" for job, (st, ec, pc) in states.items())


@pytest.mark.parametrize("jobs", [1, 50, 400])
def test_one_pjstat_per_round_whatever_the_number_of_jobs(jobs):
    ids = [str(100 + n) for n in range(jobs)]
    pjstat = FakePjstat(listing({job: ("RUN", "-", "-") for job in ids}))
    rounds = StatusRounds(pjstat)
    for _ in range(3):
        assert check(rounds, ids).status == {job: None for job in ids}
    assert pjstat.calls == [["-v"]] * 3


def test_history_only_for_the_jobs_that_left():
    pjstat = FakePjstat(listing({"1": ("RUN", "-", "-"), "2": ("EXT", "0", "0"), "77": ("RUN", "-", "-")}),
                        listing({"3": ("EXT", "0", "0"), "4": ("EXT", "137", "11"), "9": ("EXT", "0", "0")}))
    round_ = check(StatusRounds(pjstat), ["1", "2", "3", "4"])
    status = round_.status
    assert pjstat.calls == [["-v"], ["-H", "-v", "3", "4"]]
    assert status["1"] is None and status["2"].success and status["3"].success
    assert status["4"].kind == "elapse"
    assert round_.answered and round_.others == 1  # job 77: the user's, not this run's


def test_grace_for_a_job_in_neither_list():
    now = [0.0]
    pjstat = FakePjstat(listing({}))
    rounds = StatusRounds(pjstat, grace_seconds=120, clock=lambda: now[0])
    assert check(rounds, ["7"]).status == {"7": None}  # PJM may lag between its lists
    now[0] = 119
    assert check(rounds, ["7"]).status == {"7": None}
    now[0] = 120
    end = check(rounds, ["7"]).status["7"]
    assert end.kind == "missing" and "listed by neither 'pjstat -v' nor 'pjstat -H -v' for 120s" in end.reason
    assert "cancelled with pjdel" in end.reason
    assert pjstat.calls == [["-v"], ["-H", "-v", "7"]] * 3
    # seen again meanwhile: the clock starts anew
    now[0] = 200
    check(rounds, ["8"])
    pjstat.current = listing({"8": ("RUN", "-", "-")})
    now[0] = 400
    assert check(rounds, ["8"]).status == {"8": None}
    pjstat.current = listing({})
    assert check(rounds, ["8"]).status == {"8": None}


def test_a_failing_pjstat_keeps_jobs_running_with_back_off_and_gives_up_only_after_the_bound():
    """The tester's case: a 180 s pjstat outage used to fail every job in flight after the 120 s
    grace. Now the jobs stay running through it, calls back off, and the run ends only when the
    outage is over BOTH bounds (rounds in a row and seconds)."""
    now = [0.0]
    pjstat = FakePjstat(None)
    rounds = StatusRounds(pjstat, grace_seconds=120, outage_seconds=600, outage_rounds=5, max_backoff=60,
                          clock=lambda: now[0])
    seen = []
    for second in range(0, 181):
        now[0] = float(second)
        round_ = check(rounds, ["1", "2"])
        assert round_.status == {"1": None, "2": None} and not round_.give_up and not round_.answered
        if not round_.skipped:
            seen.append(second)
    assert seen == [0, 2, 6, 14, 30, 62, 122], seen  # 2, 4, 8, 16, 32, then at most 60 s apart
    # pjstat answers again: judged as usual, the outage forgotten (the grace starts anew)
    pjstat.current = listing({"1": ("RUN", "-", "-")})
    pjstat.history = listing({"2": ("EXT", "0", "0")})
    now[0] = 182.0
    round_ = check(rounds, ["1", "2"])
    assert round_.answered and round_.status["1"] is None and round_.status["2"].success
    assert rounds.failed_rounds == 0


def test_an_outage_over_both_bounds_gives_up():
    now = [0.0]
    rounds = StatusRounds(FakePjstat(None), outage_seconds=100, outage_rounds=3, max_backoff=10,
                          clock=lambda: now[0])
    verdicts = []
    for second in range(0, 121):
        now[0] = float(second)
        round_ = check(rounds, ["5"])
        if not round_.skipped:
            verdicts.append((second, round_.failed_rounds, round_.give_up))
    gave_up = [entry for entry in verdicts if entry[2]]
    assert gave_up and gave_up[0][0] >= 100 and gave_up[0][1] >= 3, verdicts
    assert all(not give for second, _, give in verdicts if second < 100)


def test_a_failing_history_call_judges_only_the_current_list():
    pjstat = FakePjstat(listing({"1": ("EXT", "3", "0")}), None)
    round_ = check(StatusRounds(pjstat), ["1", "2"])
    assert round_.status["1"].kind == "exit" and round_.status["2"] is None and not round_.answered


def test_a_hung_command_times_out_without_blocking():
    started = time.monotonic()
    assert asyncio.run(run_command(["sleep", "30"], timeout=0.5)) is None
    assert time.monotonic() - started < 5
    assert asyncio.run(run_command(["sh", "-c", "echo out; echo err >&2; exit 3"], timeout=5)) == (3, "out\n", "err\n")
    assert asyncio.run(run_command(["/nonexistent/pjstat"], timeout=5)) is None


def test_limits_of_pjstat_limit():
    limits = parse_limits(data("limit.txt"))
    assert limits == {"ru-accept": 20, "ru-run-job": 3}
    assert parse_limits(data("limit-unlimited.txt"))["ru-accept"] is None
    # another layout: name = value, more limits, words around
    assert parse_limits(" rscunit ru-accept = 1000 , ru-run-job=200\n rg-accept: 50\n") == {
        "ru-accept": 1000, "ru-run-job": 200, "rg-accept": 50}
    assert parse_limits("") == {}
    assert accept_budget(20, 3) == 17 and accept_budget(None, 3) is None and accept_budget(2, 5) == 1


def test_a_pjsub_refused_for_a_limit_is_told_from_other_errors():
    assert refused_for_limit(data("pjsub-limit.err"))
    assert not refused_for_limit(data("bad-llio.err"))
    assert refused_for_limit("[ERR.] PJM 0091 pjsub Job number of ru-accept exceeded.\n")
    assert not refused_for_limit("[INFO] PJM 0000 pjsub Job 3 submitted.\n")
    assert not refused_for_limit("[ERR.] PJM 0059 pjsub Invalid elapse value: elapse=9:99\n")


def test_memory_kill_grows_memory_only_with_node_mem():
    end = judge("20421302", parse_pjstat(data("fugaku-history.txt"))["20421302"])
    assert end.kind == "memory"
    grow, why_not = retry_advice(end, node_mem=False)
    assert grow is None and MEMORY_FIXED in why_not and "--pjm-node-mem" in why_not
    assert retry_advice(end, node_mem=True) == ("mem_mb", None)
    elapse_end = judge("3", parse_pjstat(data("history-v.txt"))["3"])
    assert retry_advice(elapse_end, node_mem=False) == ("runtime", None)
    assert retry_advice(judge("2", parse_pjstat(data("history-v.txt"))["2"]), node_mem=False) == (None, None)


def test_node_mem_passed_from_mem_mb_only_when_the_site_offers_it():
    resources = {"runtime": 10, "mem_mb": 6000}
    assert "node-mem=6000Mi" not in submit_command("j.sh", "smk-x", resources, "/l")
    command = submit_command("j.sh", "smk-x", resources, "/l", node_mem=True)
    assert command[command.index("elapse=0:10:00") + 1:][:2] == ["-L", "node-mem=6000Mi"]
    assert "-L" in submit_command("j.sh", "smk-x", {"mem_mb": None}, "/l", node_mem=True)  # node= only
    assert not any("node-mem" in word for word in submit_command("j.sh", "smk-x", {}, "/l", node_mem=True))


def test_logs_in_one_directory_per_rule():
    assert log_dir_of("/w/pjm-logs", "map_reads") == Path("/w/pjm-logs/map_reads")
    assert log_dir_of("/w/pjm-logs", "group 1/a") == Path("/w/pjm-logs/group_1_a")


def fake_venv(root, packages, python="3.11"):
    site = root / "lib" / f"python{python}" / "site-packages"
    site.mkdir(parents=True)
    (root / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (root / "bin").mkdir()
    for name, version in packages.items():
        dist = site / f"{name.replace('-', '_')}-{version}.dist-info"
        dist.mkdir()
        (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\nName: not-this\n")
    return root


def test_compute_venv_versions_read_from_its_metadata(tmp_path):
    venv = fake_venv(tmp_path / "venv", {"snakemake": "9.27.1", "genomon-smk": "0.1.0",
                                         "snakemake_executor_plugin_pjm": "0.1.0"})
    versions = installed_versions(venv)
    assert versions == {"snakemake": "9.27.1", "genomon-smk": "0.1.0", "snakemake-executor-plugin-pjm": "0.1.0"}
    login = {"snakemake": "9.27.1", "genomon-smk": "0.2.0", "snakemake-executor-plugin-pjm": "0.1.0",
             "snakemake-interface-executor-plugins": "9.4.0"}
    names = ["snakemake", "genomon_smk", "snakemake-executor-plugin-pjm", "snakemake-interface-executor-plugins",
             "not-installed-here"]
    assert version_mismatches(login, versions, names) == [
        "genomon_smk is 0.2.0 here but 0.1.0 in the compute venv",
        "snakemake-interface-executor-plugins 9.4.0 is not installed in the compute venv"]
    assert version_mismatches(versions, versions, names) == []
    assert venv_of(str(venv / "bin" / "python")) == venv
    assert venv_of("python3") is None and venv_of(str(tmp_path / "bin" / "python")) is None
    assert installed_versions(tmp_path / "nothing") == {}


def test_the_job_runs_the_compute_side_first_on_path():
    assert job_exec_prefix("/w d") == "cd '/w d'"
    prefix = job_exec_prefix("/w", "/opt/g/.venv-compute", ". /spack/setup-env.sh && spack load py-pip")
    assert prefix == ("cd /w && . /spack/setup-env.sh && spack load py-pip && "
                      'export PATH=/opt/g/.venv-compute/bin:"$PATH" VIRTUAL_ENV=/opt/g/.venv-compute')
