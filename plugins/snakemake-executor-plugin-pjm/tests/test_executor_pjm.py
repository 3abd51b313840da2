"""The plugin's PJM side on captured outputs: tests/data holds pjsub/pjstat outputs captured from
the PJM emulator of genomon-smk (.test/pjm, Fugaku's formats: emulator-*), and listings written
after the layouts of the Fugaku user guide (fugaku-*: a summary block before the header,
right-aligned columns of other widths, a forecast date in parentheses, a bulk job id)."""

from pathlib import Path

import pytest

from snakemake_executor_plugin_pjm.pjm import (
    StatusRounds,
    elapse,
    job_name,
    judge,
    log_files,
    parse_pjstat,
    submit_command,
    submitted_job_id,
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
    """pjstat answering from listings, counting calls."""

    def __init__(self, current, history=""):
        self.current, self.history, self.calls = current, history, []

    def __call__(self, args):
        self.calls.append(args)
        return self.history if "-H" in args else self.current


def listing(states):
    header = "JOB_ID  JOB_NAME  ST   START_DATE      EC  PC  SN\n"
    return header + "".join(f"{job}  smk-x  {st}  11/26 03:40:32  {ec}  {pc}  -\n" for job, (st, ec, pc) in states.items())


@pytest.mark.parametrize("jobs", [1, 50, 400])
def test_one_pjstat_per_round_whatever_the_number_of_jobs(jobs):
    ids = [str(100 + n) for n in range(jobs)]
    pjstat = FakePjstat(listing({job: ("RUN", "-", "-") for job in ids}))
    rounds = StatusRounds(pjstat)
    for _ in range(3):
        assert rounds.check(ids) == {job: None for job in ids}
    assert pjstat.calls == [["-v"]] * 3


def test_history_only_for_the_jobs_that_left():
    pjstat = FakePjstat(listing({"1": ("RUN", "-", "-"), "2": ("EXT", "0", "0")}),
                        listing({"3": ("EXT", "0", "0"), "4": ("EXT", "137", "11"), "9": ("EXT", "0", "0")}))
    status = StatusRounds(pjstat).check(["1", "2", "3", "4"])
    assert pjstat.calls == [["-v"], ["-H", "-v", "3", "4"]]
    assert status["1"] is None and status["2"].success and status["3"].success
    assert status["4"].kind == "elapse"


def test_grace_for_a_job_in_neither_list():
    now = [0.0]
    pjstat = FakePjstat(listing({}))
    rounds = StatusRounds(pjstat, grace_seconds=120, clock=lambda: now[0])
    assert rounds.check(["7"]) == {"7": None}  # PJM may lag between its lists
    now[0] = 119
    assert rounds.check(["7"]) == {"7": None}
    now[0] = 120
    end = rounds.check(["7"])["7"]
    assert end.kind == "missing" and "listed by neither 'pjstat -v' nor 'pjstat -H -v' for 120s" in end.reason
    assert pjstat.calls == [["-v"], ["-H", "-v", "7"]] * 3
    # seen again meanwhile: the clock starts anew
    now[0] = 200
    rounds.check(["8"])
    pjstat.current = listing({"8": ("RUN", "-", "-")})
    now[0] = 400
    assert rounds.check(["8"]) == {"8": None}
    pjstat.current = listing({})
    assert rounds.check(["8"]) == {"8": None}


def test_a_failing_pjstat_counts_as_missing():
    rounds = StatusRounds(lambda args: "", grace_seconds=0)
    assert rounds.check(["5"])["5"].kind == "missing"
    assert StatusRounds(lambda args: "").check([]) == {}
