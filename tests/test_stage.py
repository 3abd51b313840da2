"""Reference pre-staging: copied once, verified, reused; stale or broken copies replaced."""

import json
import os
import threading

import pytest

from genomon_smk.stage import describe, ensure_staged, main, staged_path


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
    targets = ensure_staged(manifest, cache)
    assert targets[0] == staged_path(cache, reference[0]) and open(targets[0]).read() == ">c\nACGT\n"
    before = [os.stat(t).st_ino for t in targets]
    assert ensure_staged(manifest, cache) == targets
    assert [os.stat(t).st_ino for t in targets] == before  # not copied again


def test_concurrent_jobs_copy_once_and_all_get_the_files(reference, tmp_path):
    manifest = describe(reference)
    cache = str(tmp_path / "cache")
    results = []
    threads = [threading.Thread(target=lambda: results.append(ensure_staged(manifest, cache))) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 4 and all(r == results[0] for r in results)
    assert not [n for n in os.listdir(os.path.dirname(results[0][0])) if n.endswith(".partial")]


def test_a_damaged_copy_is_replaced(reference, tmp_path):
    manifest = describe(reference)
    cache = str(tmp_path / "cache")
    target = ensure_staged(manifest, cache)[2]
    with open(target, "w") as handle:
        handle.write("truncated")
    assert open(ensure_staged(manifest, cache)[2]).read() == "x" * 5000


def test_a_changed_reference_is_refused(reference, tmp_path):
    manifest = describe(reference)
    with open(reference[2], "w") as handle:
        handle.write("y" * 5000)
    with pytest.raises(OSError, match="does not match the manifest"):
        ensure_staged(manifest, str(tmp_path / "cache"))


def test_cli_setup_then_ensure_prints_the_staged_fasta(reference, tmp_path, capsys):
    manifest = tmp_path / "staged.json"
    cache = str(tmp_path / "cache")
    assert main(["setup", "--cache", cache, "--manifest", str(manifest), *reference]) == 0
    assert [entry["size"] for entry in json.loads(manifest.read_text())] == [8, 10, 5000]
    capsys.readouterr()
    assert main(["ensure", "--cache", cache, "--manifest", str(manifest)]) == 0
    assert capsys.readouterr().out.strip() == staged_path(cache, reference[0])
