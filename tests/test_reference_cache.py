"""Reference pre-staging: copied once, verified, reused; stale or broken copies replaced."""

import json
import os
import threading

import pytest

from genomon_smk.steps.reference_cache import cache_reference, cached_path, describe, ensure_cached, main, purge


@pytest.fixture
def reference(tmp_path):
    files = []
    for name, text in (("ref.fa", ">c\nACGT\n"), ("ref.fa.fai", "c\t4\t3\t4\t5\n"), ("ref.fa.bwt", "x" * 5000)):
        path = tmp_path / "src" / name
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
        files.append(str(path))
    return files


def test_staged_once_and_reused(reference, tmp_path):
    manifest = describe(reference)
    cache = str(tmp_path / "cache")
    targets = ensure_cached(manifest, cache)
    assert targets[0] == cached_path(cache, reference[0]) and open(targets[0]).read() == ">c\nACGT\n"
    before = [os.stat(t).st_ino for t in targets]
    assert ensure_cached(manifest, cache) == targets
    assert [os.stat(t).st_ino for t in targets] == before  # not copied again


def test_concurrent_jobs_copy_once_and_all_get_the_files(reference, tmp_path):
    manifest = describe(reference)
    cache = str(tmp_path / "cache")
    results = []
    threads = [threading.Thread(target=lambda: results.append(ensure_cached(manifest, cache))) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 4 and all(r == results[0] for r in results)
    assert not [n for n in os.listdir(os.path.dirname(results[0][0])) if n.endswith(".partial")]


def test_a_damaged_copy_is_replaced(reference, tmp_path):
    manifest = describe(reference)
    cache = str(tmp_path / "cache")
    target = ensure_cached(manifest, cache)[2]
    with open(target, "w") as handle:
        handle.write("truncated")
    assert open(ensure_cached(manifest, cache)[2]).read() == "x" * 5000


def test_a_changed_reference_is_refused(reference, tmp_path):
    manifest = describe(reference)
    with open(reference[2], "w") as handle:
        handle.write("y" * 5000)
    with pytest.raises(OSError, match="does not match the manifest"):
        ensure_cached(manifest, str(tmp_path / "cache"))


def test_cli_setup_then_ensure_prints_the_staged_fasta(reference, tmp_path, capsys):
    manifest = tmp_path / "staged.json"
    cache = str(tmp_path / "cache")
    assert main(["setup", "--cache", cache, "--manifest", str(manifest), *reference]) == 0
    assert [entry["size"] for entry in json.loads(manifest.read_text())] == [8, 10, 5000]
    capsys.readouterr()
    assert main(["ensure", "--cache", cache, "--manifest", str(manifest)]) == 0
    assert capsys.readouterr().out.strip() == cached_path(cache, reference[0])


@pytest.fixture
def fake_llio(tmp_path, monkeypatch):
    """A stand-in llio_transfer (via LLIO_TRANSFER) that appends its arguments to a log; returns the log."""
    log = tmp_path / "llio.log"
    script = tmp_path / "llio_transfer"
    script.write_text(f'#!/bin/sh\necho "$*" >>"{log}"\n')
    script.chmod(0o755)
    monkeypatch.setenv("LLIO_TRANSFER", str(script))
    return log


def test_llio_transfer_setup_and_ensure_transfer_every_file_and_keep_paths(reference, tmp_path, fake_llio, capsys):
    manifest = tmp_path / "staged.json"
    cache = tmp_path / "cache"
    assert main(["setup", "--method", "llio_transfer", "--cache", str(cache), "--manifest", str(manifest),
                 *reference]) == 0
    capsys.readouterr()
    assert main(["ensure", "--method", "llio_transfer", "--cache", str(cache), "--manifest", str(manifest)]) == 0
    assert capsys.readouterr().out.strip() == reference[0]  # read at its own path
    assert fake_llio.read_text().splitlines() == [" ".join(reference)] * 2
    assert not cache.exists()  # nothing copied


def test_llio_transfer_refuses_a_resized_reference_and_reports_a_failing_transfer(
    reference, tmp_path, fake_llio, monkeypatch
):
    manifest = describe(reference)
    with open(reference[1], "a") as handle:
        handle.write("more\n")
    with pytest.raises(OSError, match="was the reference changed"):
        cache_reference(manifest, str(tmp_path / "cache"), "llio_transfer")
    failing = tmp_path / "failing"
    failing.write_text("#!/bin/sh\necho 'not in a job' >&2\nexit 1\n")
    failing.chmod(0o755)
    monkeypatch.setenv("LLIO_TRANSFER", str(failing))
    with pytest.raises(OSError, match="not in a job"):
        cache_reference(describe(reference), str(tmp_path / "cache"), "llio_transfer")


def test_purge_runs_llio_transfer_purge_only_inside_a_pjm_job(reference, fake_llio):
    manifest = describe(reference)
    assert "nothing to purge" in purge(manifest, "copy", inside_job=True)
    assert "not inside a PJM job" in purge(manifest, "llio_transfer", inside_job=False)
    assert not fake_llio.exists()
    assert "purged 3" in purge(manifest, "llio_transfer", inside_job=True)
    assert fake_llio.read_text().splitlines() == ["--purge " + " ".join(reference)]


def test_start_inside_a_pjm_job_transfers_once_for_the_whole_run(reference, tmp_path, fake_llio, monkeypatch, capsys):
    manifest = tmp_path / "reference" / "staged.json"
    common = ["--method", "llio_transfer", "--cache", str(tmp_path / "cache"), "--manifest", str(manifest)]
    monkeypatch.delenv("PJM_JOBID", raising=False)
    assert main(["start", "--manifest", str(manifest), *reference]) == 0  # login node: nothing
    assert not fake_llio.exists()
    monkeypatch.setenv("PJM_JOBID", "41")
    assert main(["start", "--manifest", str(manifest), *reference]) == 0
    assert main(["setup", *common, *reference]) == 0
    assert main(["ensure", *common]) == 0
    assert fake_llio.read_text().splitlines() == [" ".join(reference)]  # once, by start
    monkeypatch.setenv("PJM_JOBID", "42")  # another job (a per-rule job, a resumed run): its own transfer
    assert main(["ensure", *common]) == 0
    assert len(fake_llio.read_text().splitlines()) == 2
    monkeypatch.setenv("PJM_JOBID", "41")
    assert main(["purge", "--method", "llio_transfer", "--manifest", str(manifest)]) == 0
    assert fake_llio.read_text().splitlines()[-1] == "--purge " + " ".join(reference)
    assert not (tmp_path / "reference" / "staged.json.llio_job").exists()
    capsys.readouterr()
