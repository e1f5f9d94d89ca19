"""Data sets by name (data/datasets.py): download through a mirror, checks, cache, extraction,
name resolution in every task's reader, and `seqlab datasets`.

No test reaches the internet: a loopback HTTP server serves a mirror folder the test writes, and
`SEQLAB_DATA_MIRROR` points at it. The entries the tests download are registered for the test
only (`monkeypatch.setitem` on `REGISTRY`), with origin URLs that do not resolve, so a request
that bypassed the mirror would fail.
"""

import contextlib
import dataclasses
import gzip
import hashlib
import http.server
import io
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tarfile
import threading
import time
import zipfile
from pathlib import Path

import pytest

from seqlab import cli
from seqlab.data import classification, conll, datasets, text, timeseries, translation
from seqlab.data.datasets import DataSet, RemoteFile
from seqlab.data.errors import DataError

ORIGIN = "https://origin.invalid/files"


def sha256(data):
    return hashlib.sha256(data).hexdigest()


class Mirror:
    """A folder served over HTTP on 127.0.0.1, recording every request.

    `truncated` paths are sent with their full Content-Length but only half their bytes before
    the connection closes; `delay` seconds pass before each answer.
    """

    def __init__(self, root):
        self.root = root
        self.requests = []
        self.truncated = set()
        self.delay = 0.0
        mirror = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                mirror.requests.append(self.path)
                time.sleep(mirror.delay)
                file = mirror.root / self.path.lstrip("/")
                if not file.is_file():
                    self.send_error(404)
                    return
                body = file.read_bytes()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.path in mirror.truncated:
                    self.wfile.write(body[: len(body) // 2])
                    self.close_connection = True
                    return
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,),
                                       daemon=True)
        self.thread.start()

    def put(self, folder, name, data):
        """Serves `data` as `<mirror>/<folder>/<name>`."""
        path = self.root / folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def mirror(tmp_path, monkeypatch):
    """A loopback mirror, and the cache in `tmp_path/cache` (`SEQLAB_DATA_HOME`)."""
    served = Mirror(tmp_path / "mirror")
    for variable in ("no_proxy", "NO_PROXY"):  # a machine's HTTP proxy must not see loopback
        monkeypatch.setenv(variable, "127.0.0.1")
    monkeypatch.setenv(datasets.MIRROR_VARIABLE, served.url)
    monkeypatch.setenv(datasets.DATA_HOME_VARIABLE, str(tmp_path / "cache"))
    yield served
    served.close()


def register(monkeypatch, name, files, reader_path=".", folder=None):
    """Registers a test data set of `files` (`RemoteFile`s) for one test."""
    monkeypatch.setitem(datasets.REGISTRY, name, DataSet(
        name=name, description=f"test set {name}", files=tuple(files),
        reader_path=reader_path, license="CC0 (test)", citation="Test, A. (2026)",
        usage=f"seqlab charrnn train --data {name}", folder=folder,
    ))


def serve_file(mirror, monkeypatch, name, file_name, data, reader_path=None, **remote):
    """Registers `name` as one file and puts it on the mirror; returns the `RemoteFile`."""
    entry = RemoteFile(f"{ORIGIN}/{file_name}", len(data), sha256(data), **remote)
    register(monkeypatch, name, [entry], reader_path or entry.product)
    mirror.put(name, file_name, data)
    return entry


def everything_in(folder):
    """Every entry under `folder`, hidden ones included, relative to it."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")) if folder.exists() \
        else []


TEXT = b"First Citizen:\nBefore we proceed any further, hear me speak.\n" * 40


# ---------------------------------------------------------------------------------------------
# Download, cache, checks


def test_download_goes_through_the_mirror_and_the_second_call_is_served_by_the_cache(
        mirror, monkeypatch, tmp_path, capsys):
    serve_file(mirror, monkeypatch, "tiny-text", "input.txt", TEXT)
    path = datasets.download("tiny-text")
    assert path == tmp_path / "cache" / "tiny-text" / "input.txt"
    assert path.read_bytes() == TEXT
    assert mirror.requests == ["/tiny-text/input.txt"]
    assert "input.txt" in capsys.readouterr().err  # the progress bar
    assert datasets.download("tiny-text") == path
    assert datasets.resolve_path("tiny-text") == path
    assert datasets.path("tiny-text") == path
    assert mirror.requests == ["/tiny-text/input.txt"]
    assert everything_in(tmp_path / "cache") == ["tiny-text", "tiny-text/input.txt"]
    # A cached file changed since (a command's output written over it) is not read as the set.
    path.write_bytes(b"step,forecast\n1,39.05\n")
    with pytest.raises(DataError, match=r"input\.txt: the cached file of tiny-text has 22 bytes, "
                                        rf"not the registered {len(TEXT):,}: it was changed"):
        datasets.download("tiny-text")
    path.unlink()
    assert datasets.download("tiny-text").read_bytes() == TEXT  # fetched again


def test_a_checksum_mismatch_names_the_file_and_both_hashes_and_keeps_nothing(
        mirror, monkeypatch, tmp_path):
    entry = serve_file(mirror, monkeypatch, "tiny-text", "input.txt", TEXT)
    tampered = TEXT.replace(b"speak", b"SPEAK")
    mirror.put("tiny-text", "input.txt", tampered)
    with pytest.raises(DataError) as error:
        datasets.download("tiny-text")
    message = str(error.value)
    assert message.startswith("input.txt: checksum mismatch")
    assert f"expected SHA-256 {entry.sha256}, got {sha256(tampered)}" in message
    assert not (tmp_path / "cache").exists()  # the folders it created, removed
    with pytest.raises(DataError, match="not downloaded yet"):
        datasets.path("tiny-text")


def test_an_interrupted_download_leaves_nothing_a_later_run_would_trust(
        mirror, monkeypatch, tmp_path):
    serve_file(mirror, monkeypatch, "tiny-text", "input.txt", TEXT)
    mirror.truncated.add("/tiny-text/input.txt")
    half = len(TEXT) // 2
    with pytest.raises(DataError, match=f"stopped after {half} of {len(TEXT)} bytes"):
        datasets.download("tiny-text")
    assert not (tmp_path / "cache").exists()  # the folders it created, removed
    assert not datasets.is_downloaded("tiny-text")
    # The next run downloads it again, whole.
    mirror.truncated.clear()
    assert datasets.download("tiny-text").read_bytes() == TEXT
    assert len(mirror.requests) == 2


def test_ctrl_c_during_a_download_leaves_no_file(mirror, monkeypatch, tmp_path):
    serve_file(mirror, monkeypatch, "tiny-text", "input.txt", TEXT)

    def interrupt(self, received):
        raise KeyboardInterrupt

    monkeypatch.setattr(datasets._ProgressBar, "update", interrupt)
    with pytest.raises(KeyboardInterrupt):
        datasets.download("tiny-text")
    assert not (tmp_path / "cache").exists()  # the folders it created, removed


def test_a_server_error_is_one_clear_data_error(mirror, monkeypatch, tmp_path):
    register(monkeypatch, "tiny-text", [RemoteFile(f"{ORIGIN}/input.txt", 10, "0" * 64)],
             "input.txt")
    with pytest.raises(DataError, match=r"input.txt: download failed: HTTP 404 .*/tiny-text/"
                                        r"input.txt"):
        datasets.download("tiny-text")
    assert not (tmp_path / "cache").exists()  # the folders it created, removed


def test_without_a_connection_the_error_names_the_mirror_variable_and_a_local_path(
        mirror, monkeypatch, tmp_path):
    serve_file(mirror, monkeypatch, "tiny-text", "input.txt", TEXT)
    monkeypatch.setenv(datasets.MIRROR_VARIABLE, "http://127.0.0.1:9")  # nothing listens there
    home = tmp_path / "home" / "datasets" / "seqlab"
    monkeypatch.setenv(datasets.DATA_HOME_VARIABLE, str(home))
    (tmp_path / "home").mkdir()  # the user's: kept, as seqlab did not create it
    with pytest.raises(DataError) as error:
        datasets.download("tiny-text")
    message = str(error.value)
    assert message.startswith("input.txt: download failed: ")
    assert "SEQLAB_DATA_MIRROR=URL" in message and "<URL>/tiny-text/input.txt" in message
    assert "in place of the name 'tiny-text'" in message and "\n" not in message
    # The folders this download created are gone; the one that was there is kept.
    assert everything_in(tmp_path / "home") == []


def serve_once(answer):
    """A loopback server that answers its first connection with the bytes `answer`, then
    closes it; returns its URL."""
    listener = socket.create_server(("127.0.0.1", 0))

    def reply():
        with listener:
            connection, _ = listener.accept()
            with connection:
                connection.recv(65536)
                connection.sendall(answer)

    threading.Thread(target=reply, daemon=True).start()
    return f"http://127.0.0.1:{listener.getsockname()[1]}"


@pytest.mark.parametrize("answer, expected", [
    # A chunked answer cut short: the connection closed early, as with a Content-Length.
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n100\r\n" + b"x" * 40,
     r"after 0 of \d+ bytes: the connection was closed early"),
    # Another service at the mirror's port (a mistyped port): not HTTP.
    (b"SSH-2.0-OpenSSH_9.6\r\n", r"did not answer in HTTP \(BadStatusLine: "
                                  r"'SSH-2.0-OpenSSH_9.6'\); check the URL"),
])
def test_an_answer_that_is_not_whole_http_is_one_clear_data_error(
        answer, expected, mirror, monkeypatch, tmp_path):
    serve_file(mirror, monkeypatch, "tiny-text", "input.txt", TEXT)
    monkeypatch.setenv(datasets.MIRROR_VARIABLE, serve_once(answer))
    with pytest.raises(DataError, match=r"^input.txt: download failed.*" + expected
                       + r".*SEQLAB_DATA_MIRROR"):
        datasets.download("tiny-text", progress=False)
    assert not (tmp_path / "cache").exists()


def test_a_mirror_may_be_a_folder_and_anything_else_is_named(mirror, monkeypatch, tmp_path):
    serve_file(mirror, monkeypatch, "tiny-text", "input.txt", TEXT)
    monkeypatch.chdir(mirror.root.parent)
    monkeypatch.setenv(datasets.MIRROR_VARIABLE, mirror.root.name)  # relative: from here
    assert datasets.download("tiny-text", progress=False).read_bytes() == TEXT
    assert mirror.requests == []  # read from the folder, not the server
    monkeypatch.setenv(datasets.MIRROR_VARIABLE, "mirror.example:8000/data")
    (tmp_path / "cache" / "tiny-text" / "input.txt").unlink()
    with pytest.raises(DataError, match=r"^SEQLAB_DATA_MIRROR=mirror.example:8000/data is "
                                        r"neither a URL \(http://, https:// or file://\) nor a "
                                        r"folder"):
        datasets.download("tiny-text")


def test_a_cache_folder_that_cannot_be_written_names_the_variable(mirror, monkeypatch,
                                                                 tmp_path):
    """A folder the user may not write into (a read-only mode, which root would ignore, so the
    refusal is raised where the file is created)."""
    serve_file(mirror, monkeypatch, "tiny-text", "input.txt", TEXT)
    (tmp_path / "cache" / "tiny-text").mkdir(parents=True)

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(datasets.tempfile, "mkstemp", refuse)
    with pytest.raises(DataError, match=r"tiny-text: cannot write into the data-set cache "
                                        r"\(Permission denied\); set SEQLAB_DATA_HOME"):
        datasets.download("tiny-text", progress=False)


def test_a_downloaded_file_is_readable_as_the_umask_allows(mirror, monkeypatch, tmp_path):
    """mkstemp's 0600 kept a shared cache's files from its other users."""
    serve_file(mirror, monkeypatch, "tiny-text", "input.txt", TEXT)
    previous = os.umask(0o022)
    try:
        path = datasets.download("tiny-text", progress=False)
    finally:
        os.umask(previous)
    assert path.stat().st_mode & 0o777 == 0o644


def test_a_cached_archive_changed_since_its_download_is_named_to_delete(
        mirror, monkeypatch, tmp_path):
    plain = b"A man rides a bike.\nTwo dogs play.\n"
    packed = gzip.compress(plain)
    serve_file(mirror, monkeypatch, "tiny-captions", "train.en.gz", packed, reader_path=".",
               unpack="gz", unpacked_sha256=sha256(plain))
    folder = datasets.download("tiny-captions", progress=False)
    # Another archive of the same size (a gzip header's time differs): its content is refused
    # naming the archive to delete; one of another size, before it is read.
    other = gzip.compress(plain.replace(b"bike", b"kite"))
    assert len(other) == len(packed)
    (folder / "train.en.gz").write_bytes(other)
    (folder / "train.en").unlink()
    with pytest.raises(DataError, match=r"train.en: checksum mismatch of the extracted file: .*"
                                        r"extracted from the cached archive .*train.en.gz, "
                                        r"changed after its download: delete it"):
        datasets.download("tiny-captions")
    (folder / "train.en.gz").write_bytes(packed[:-3])
    with pytest.raises(DataError, match=rf"train.en.gz: the cached archive of tiny-captions has "
                                        rf"{len(packed) - 3} bytes, not the registered "
                                        rf"{len(packed)}"):
        datasets.download("tiny-captions")
    assert mirror.requests == ["/tiny-captions/train.en.gz"]


def test_a_failed_download_keeps_a_cache_folder_that_holds_other_files(
        mirror, monkeypatch, tmp_path):
    register(monkeypatch, "tiny-text", [RemoteFile(f"{ORIGIN}/input.txt", 10, "0" * 64)],
             "input.txt")
    mine = tmp_path / "cache" / "tiny-text" / "notes.txt"
    mine.parent.mkdir(parents=True)
    mine.write_text("mine")
    with pytest.raises(DataError, match="HTTP 404"):
        datasets.download("tiny-text")
    assert everything_in(tmp_path / "cache") == ["tiny-text", "tiny-text/notes.txt"]


def test_a_file_of_another_size_is_a_wrong_file_not_a_closed_connection(
        mirror, monkeypatch, tmp_path):
    entry = serve_file(mirror, monkeypatch, "tiny-text", "input.txt", TEXT)
    for served in (TEXT[:100], TEXT + b"more"):
        mirror.put("tiny-text", "input.txt", served)
        with pytest.raises(DataError) as error:
            datasets.download("tiny-text")
        message = str(error.value)
        assert message.startswith(f"input.txt: wrong file: expected {entry.size} bytes")
        assert f"got {len(served)} bytes from {mirror.url}/tiny-text/input.txt" in message
        assert "run the command again" not in message and "closed" not in message
        assert not (tmp_path / "cache").exists()


def test_a_mirror_may_serve_a_gz_file_decompressed(mirror, monkeypatch, tmp_path):
    plain = b"A man rides a bike.\nTwo dogs play.\n"
    serve_file(mirror, monkeypatch, "tiny-captions", "train.en.gz", gzip.compress(plain),
               reader_path=".", unpack="gz", unpacked_sha256=sha256(plain),
               unpacked_size=len(plain))
    (mirror.root / "tiny-captions" / "train.en.gz").unlink()
    mirror.put("tiny-captions", "train.en", plain)
    folder = datasets.download("tiny-captions")
    assert (folder / "train.en").read_bytes() == plain
    assert everything_in(folder) == ["train.en"]
    assert mirror.requests == ["/tiny-captions/train.en.gz", "/tiny-captions/train.en"]
    assert datasets.is_downloaded("tiny-captions")


def test_a_decompressed_file_on_a_mirror_is_checked_against_its_own_hash(
        mirror, monkeypatch, tmp_path):
    plain = b"A man rides a bike.\nTwo dogs play.\n"
    serve_file(mirror, monkeypatch, "tiny-captions", "train.en.gz", gzip.compress(plain),
               reader_path=".", unpack="gz", unpacked_sha256=sha256(plain),
               unpacked_size=len(plain))
    (mirror.root / "tiny-captions" / "train.en.gz").unlink()
    other = plain.replace(b"bike", b"BIKE")
    mirror.put("tiny-captions", "train.en", other)
    with pytest.raises(DataError, match=rf"train.en: checksum mismatch: expected SHA-256 "
                                        rf"{sha256(plain)}, got {sha256(other)}"):
        datasets.download("tiny-captions")
    mirror.put("tiny-captions", "train.en", plain + b"x")
    with pytest.raises(DataError, match=rf"train.en: wrong file: expected {len(plain)} bytes"):
        datasets.download("tiny-captions")
    (mirror.root / "tiny-captions" / "train.en").unlink()
    with pytest.raises(DataError, match=r"HTTP 404.*<URL>/tiny-captions/train.en.gz or "
                                        r"<URL>/tiny-captions/train.en"):
        datasets.download("tiny-captions")
    assert not (tmp_path / "cache").exists()


def test_a_file_url_mirror_serves_the_plain_multi30k_files(monkeypatch, tmp_path):
    """The plain Multi30k files (as /work/shared/data/multi30k holds them) are accepted from a
    mirror: their registered decompressed sizes and hashes are those files'."""
    data_set = datasets.get("multi30k")
    root = tmp_path / "mirror" / "multi30k"
    root.mkdir(parents=True)
    for remote in data_set.files:
        (root / remote.product).write_bytes(b"not the real file\n")
    monkeypatch.setenv(datasets.MIRROR_VARIABLE, (tmp_path / "mirror").as_uri())
    monkeypatch.setenv(datasets.DATA_HOME_VARIABLE, str(tmp_path / "cache"))
    with pytest.raises(DataError, match=r"train.en: wrong file: expected 1801238 bytes"):
        datasets.download("multi30k")
    assert all(remote.unpacked_size and remote.unpacked_sha256 for remote in data_set.files)


def test_tar_gz_is_extracted_into_place_and_the_archive_kept(mirror, monkeypatch, tmp_path):
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w:gz") as bundle:
        for name, data in {"corpus/train/pos/1.txt": b"good", "corpus/train/neg/1.txt": b"bad",
                           "corpus/README": b"about"}.items():
            member = tarfile.TarInfo(name)
            member.size = len(data)
            bundle.addfile(member, io.BytesIO(data))
    serve_file(mirror, monkeypatch, "tiny-reviews", "corpus.tar.gz", archive.getvalue(),
               unpack="tar.gz", member="corpus")
    folder = datasets.download("tiny-reviews")
    assert folder == tmp_path / "cache" / "tiny-reviews" / "corpus"
    assert (folder / "train" / "pos" / "1.txt").read_bytes() == b"good"
    assert everything_in(tmp_path / "cache" / "tiny-reviews") == [
        ".corpus.manifest.json", "corpus", "corpus.tar.gz", "corpus/README", "corpus/train",
        "corpus/train/neg", "corpus/train/neg/1.txt", "corpus/train/pos",
        "corpus/train/pos/1.txt",
    ]
    # A folder of the extracted set partly deleted is no longer the data set (a task would
    # train on what is left); deleted whole, it is extracted again from the kept archive.
    (folder / "train" / "neg" / "1.txt").unlink()
    message = r"corpus: the cached folder of tiny-reviews holds 2 files \(9 bytes\), not the 3"
    for call in (datasets.download, datasets.path):
        with pytest.raises(DataError, match=message):
            call("tiny-reviews")
    assert not datasets.is_downloaded("tiny-reviews")
    assert re.search(r"^tiny-reviews .* changed ", datasets.format_list(), flags=re.M)
    assert "downloaded: changed after its download: " in datasets.format_info("tiny-reviews")
    shutil.rmtree(folder)
    assert datasets.download("tiny-reviews") == folder
    assert (folder / "train" / "neg" / "1.txt").read_bytes() == b"bad"
    assert len(mirror.requests) == 1 and datasets.is_downloaded("tiny-reviews")


def test_a_tar_member_that_escapes_its_folder_is_refused(mirror, monkeypatch, tmp_path):
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w:gz") as bundle:
        link = tarfile.TarInfo("corpus/evil")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        bundle.addfile(link)
    serve_file(mirror, monkeypatch, "tiny-reviews", "corpus.tar.gz", archive.getvalue(),
               unpack="tar.gz", member="corpus")
    with pytest.raises(DataError, match="corpus.tar.gz"):
        datasets.download("tiny-reviews")
    assert everything_in(tmp_path / "cache" / "tiny-reviews") == ["corpus.tar.gz"]


def test_a_zip_member_is_extracted_and_names_sharing_the_archive_download_it_once(
        mirror, monkeypatch, tmp_path):
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as bundle:
        bundle.writestr("vectors.2d.txt", "the 0.1 0.2\n")
        bundle.writestr("vectors.3d.txt", "the 0.1 0.2 0.3\n")
    data = archive.getvalue()
    for dimension in (2, 3):
        entry = RemoteFile(f"{ORIGIN}/vectors.zip", len(data), sha256(data), unpack="zip",
                           member=f"vectors.{dimension}d.txt")
        register(monkeypatch, f"vectors.{dimension}d", [entry], entry.product, folder="vectors")
    mirror.put("vectors", "vectors.zip", data)
    two = datasets.resolve_path("vectors.2d")
    assert two == tmp_path / "cache" / "vectors" / "vectors.2d.txt"
    assert two.read_text() == "the 0.1 0.2\n"
    assert not (two.parent / "vectors.3d.txt").exists()  # only the member asked for
    assert datasets.resolve_path("vectors.3d").read_text() == "the 0.1 0.2 0.3\n"
    assert mirror.requests == ["/vectors/vectors.zip"]


def test_gz_is_decompressed_beside_it_and_its_content_checked(mirror, monkeypatch, tmp_path):
    plain = b"A man rides a bike.\nTwo dogs play.\n"
    serve_file(mirror, monkeypatch, "tiny-captions", "train.en.gz", gzip.compress(plain),
               reader_path=".", unpack="gz", unpacked_sha256=sha256(plain))
    folder = datasets.download("tiny-captions")
    assert (folder / "train.en").read_bytes() == plain
    assert everything_in(folder) == ["train.en", "train.en.gz"]


def test_gz_whose_content_differs_from_its_hash_keeps_no_decompressed_file(
        mirror, monkeypatch, tmp_path):
    serve_file(mirror, monkeypatch, "tiny-captions", "train.en.gz", gzip.compress(b"other\n"),
               reader_path=".", unpack="gz", unpacked_sha256=sha256(b"expected\n"))
    with pytest.raises(DataError, match=r"train.en: checksum mismatch of the extracted file: "
                                        rf"expected SHA-256 {sha256(b'expected' + bytes([10]))}"):
        datasets.download("tiny-captions")
    assert everything_in(tmp_path / "cache" / "tiny-captions") == ["train.en.gz"]


def test_two_downloads_of_one_name_at_once_both_succeed_and_leave_one_clean_copy(
        mirror, monkeypatch, tmp_path):
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w:gz") as bundle:
        member = tarfile.TarInfo("corpus/a.txt")
        member.size = len(TEXT)
        bundle.addfile(member, io.BytesIO(TEXT))
    serve_file(mirror, monkeypatch, "tiny-reviews", "corpus.tar.gz", archive.getvalue(),
               unpack="tar.gz", member="corpus")
    mirror.delay = 0.5  # both requests are in flight before either finishes
    results, errors = [], []

    def fetch():
        try:
            results.append(datasets.download("tiny-reviews", progress=False))
        except Exception as error:  # noqa: BLE001 - reported by the assertion below
            errors.append(error)

    threads = [threading.Thread(target=fetch) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert len(mirror.requests) == 2, "the two downloads did not overlap"
    folder = tmp_path / "cache" / "tiny-reviews"
    assert results == [folder / "corpus"] * 2
    assert (folder / "corpus" / "a.txt").read_bytes() == TEXT
    assert everything_in(folder) == [".corpus.manifest.json", "corpus", "corpus.tar.gz",
                                     "corpus/a.txt"]


def test_leftovers_of_a_killed_download_are_removed_once_a_day_old(mirror, monkeypatch,
                                                                     tmp_path):
    serve_file(mirror, monkeypatch, "tiny-text", "input.txt", TEXT)
    folder = tmp_path / "cache" / "tiny-text"
    folder.mkdir(parents=True)
    old, recent = folder / ".input.txt.killed.part", folder / ".input.txt.running.part"
    old.write_bytes(b"half")
    recent.write_bytes(b"half")
    two_days_ago = time.time() - 2 * 24 * 3600
    os.utime(old, (two_days_ago, two_days_ago))
    datasets.download("tiny-text", progress=False)
    assert everything_in(folder) == [".input.txt.running.part", "input.txt"]


def test_the_cache_is_under_seqlab_data_home_else_keras_home(monkeypatch, tmp_path):
    monkeypatch.setenv(datasets.DATA_HOME_VARIABLE, str(tmp_path / "mine"))
    assert datasets.data_home() == tmp_path / "mine"
    monkeypatch.delenv(datasets.DATA_HOME_VARIABLE)
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "keras"))
    assert datasets.data_home() == tmp_path / "keras" / "datasets" / "seqlab"
    monkeypatch.delenv("KERAS_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert datasets.data_home() == tmp_path / "home" / ".keras" / "datasets" / "seqlab"


def test_without_a_mirror_the_origin_url_is_fetched(monkeypatch):
    monkeypatch.delenv(datasets.MIRROR_VARIABLE, raising=False)
    data_set = datasets.get("wnut17")
    assert [datasets.mirror_url(data_set, r) for r in data_set.files] == \
        [r.url for r in data_set.files]
    monkeypatch.setenv(datasets.MIRROR_VARIABLE, "http://mirror.example/seqlab/")
    glove = datasets.get("glove.6B.100d")
    assert datasets.mirror_url(glove, glove.files[0]) == \
        "http://mirror.example/seqlab/glove.6B/glove.6B.zip"


# ---------------------------------------------------------------------------------------------
# resolve_path


def test_an_existing_path_wins_over_a_name(mirror, monkeypatch, tmp_path):
    serve_file(mirror, monkeypatch, "tiny-text", "input.txt", TEXT)
    monkeypatch.chdir(tmp_path)
    Path("tiny-text").write_text("mine")
    assert datasets.resolve_path("tiny-text") == Path("tiny-text")
    assert not datasets.is_name("tiny-text")
    assert mirror.requests == []


def test_anything_else_comes_back_unchanged_for_the_readers_not_found_error(tmp_path):
    assert datasets.resolve_path("no-such-set") == Path("no-such-set")
    missing = tmp_path / "missing.csv"
    assert datasets.resolve_path(missing) == missing
    with pytest.raises(DataError, match="missing.csv: file not found"):
        timeseries.read_csv(missing)


def test_unknown_names_and_missing_downloads_are_clear_errors(mirror):
    with pytest.raises(DataError, match=r"unknown data set 'nope'; the known names are: "
                                        r"airline-passengers, .*tinyshakespeare"):
        datasets.info("nope")
    with pytest.raises(DataError, match=r"'wnut17' is not downloaded yet .* `seqlab datasets "
                                        r"download wnut17`"):
        datasets.path("wnut17")


def test_the_embedded_series_needs_no_download(mirror):
    path = datasets.download("yearly-sunspots")
    assert path == datasets.path("yearly-sunspots") == datasets.resolve_path("yearly-sunspots")
    facts = datasets.info("yearly-sunspots")
    assert facts["embedded"] == "statsmodels" and facts["downloaded"] and facts["files"] == []
    frame = timeseries.read_csv("yearly-sunspots")
    assert list(frame.columns) == ["YEAR", "SUNACTIVITY"] and len(frame) == 309
    assert mirror.requests == []


# ---------------------------------------------------------------------------------------------
# Each task's reader takes a name


def test_charrnn_reader_takes_a_name(mirror, monkeypatch):
    serve_file(mirror, monkeypatch, "tiny-text", "input.txt", TEXT)
    corpus, source = text.load_corpus("tiny-text")
    assert corpus == TEXT.decode() and source == "tiny-text"


def test_timeseries_reader_takes_a_name(mirror, monkeypatch):
    csv = b"Month,Passengers\n1949-01,112\n1949-02,118\n1949-03,132\n"
    serve_file(mirror, monkeypatch, "tiny-series", "series.csv", csv)
    frame = timeseries.read_csv("tiny-series")
    assert frame["Passengers"].tolist() == [112, 118, 132]


def test_sentiment_readers_take_a_name(mirror, monkeypatch):
    lines = {"rt.pos": b"a fine film\nwonderful\n", "rt.neg": b"dull\na waste of time\n"}
    register(monkeypatch, "tiny-polarity",
             [RemoteFile(f"{ORIGIN}/{n}", len(d), sha256(d)) for n, d in lines.items()])
    for name, data in lines.items():
        mirror.put("tiny-polarity", name, data)
    data = classification.load_training_data("tiny-polarity")
    assert data.layout == "line files"
    assert sorted(zip(data.train.labels, data.train.texts)) == [
        ("neg", "a waste of time"), ("neg", "dull"), ("pos", "a fine film"), ("pos", "wonderful"),
    ]
    examples, _ = classification.read_examples("tiny-polarity")
    assert len(examples) == 4


def test_sentiment_test_data_may_name_a_set_with_its_own_test_split(mirror, monkeypatch,
                                                                     tmp_path):
    from seqlab.pipelines.sentiment import SentimentConfig, load_data

    archive = io.BytesIO()
    reviews = {"reviews/train/pos/1.txt": b"great", "reviews/train/neg/1.txt": b"awful",
               "reviews/test/pos/1.txt": b"superb", "reviews/test/neg/1.txt": b"boring"}
    with tarfile.open(fileobj=archive, mode="w:gz") as bundle:
        for name, data in reviews.items():
            member = tarfile.TarInfo(name)
            member.size = len(data)
            bundle.addfile(member, io.BytesIO(data))
    serve_file(mirror, monkeypatch, "tiny-reviews", "reviews.tar.gz", archive.getvalue(),
               unpack="tar.gz", member="reviews")
    own = tmp_path / "own"
    own.mkdir()
    (own / "x.pos").write_text("fine\nlovely\n")
    (own / "x.neg").write_text("bad\ndull\n")
    data = load_data(SentimentConfig(data=str(own), test_data="tiny-reviews"))
    assert sorted(data.test.texts) == ["boring", "superb"]  # test/, not train/ and test/


def test_ner_reader_takes_a_name_for_data_validation_and_test(mirror, monkeypatch, tmp_path):
    files = {"tiny.train.conll": b"Ulm\tB-LOC\nis\tO\n", "tiny.dev.conll": b"Bonn\tB-LOC\n",
             "tiny.test.conll": b"Paris\tB-LOC\n"}
    register(monkeypatch, "tiny-ner",
             [RemoteFile(f"{ORIGIN}/{n}", len(d), sha256(d)) for n, d in files.items()])
    for name, data in files.items():
        mirror.put("tiny-ner", name, data)
    folder = tmp_path / "cache" / "tiny-ner"
    assert conll.split_files("tiny-ner") == {
        split: str(folder / f"tiny.{key}.conll")
        for split, key in (("train", "train"), ("validation", "dev"), ("test", "test"))
    }
    own = tmp_path / "mine.conll"
    own.write_text("Rome\tB-LOC\n")
    assert conll.split_files(str(own), validation_data="tiny-ner", test_data="tiny-ner") == {
        "train": str(own), "validation": str(folder / "tiny.dev.conll"),
        "test": str(folder / "tiny.test.conll"),
    }
    assert [s.tokens for s in conll.read_conll(folder / "tiny.test.conll").sentences] == \
        [["Paris"]]


def test_translation_reader_takes_a_name(mirror, monkeypatch):
    captions = {"train.en": b"a dog\na cat\n", "train.de": b"ein Hund\neine Katze\n"}
    remotes = []
    for name, plain in captions.items():
        packed = gzip.compress(plain)
        remotes.append(RemoteFile(f"{ORIGIN}/{name}.gz", len(packed), sha256(packed),
                                  unpack="gz", unpacked_sha256=sha256(plain)))
        mirror.put("tiny-captions", f"{name}.gz", packed)
    register(monkeypatch, "tiny-captions", remotes)
    given, source = translation.read_pairs("tiny-captions", languages=("en", "de"))
    assert source == "tiny-captions"
    assert given["train"].sources == ["a dog", "a cat"]
    assert given["train"].targets == ["ein Hund", "eine Katze"]


def test_m4_reader_takes_a_name_whose_two_files_are_fetched_and_checked(mirror, monkeypatch):
    from seqlab.data import panel

    files = {"Weekly-train.csv": b'"V1","V2","V3","V4"\n"W1","1","2","3"\n"W2","5","6",\n',
             "Weekly-test.csv": b'"V1","V2"\n"W2","7"\n"W1","4"\n'}
    entry = datasets.REGISTRY["m4-weekly"]
    # The real entry's URLs and layout, with the tiny files' sizes and hashes.
    monkeypatch.setitem(datasets.REGISTRY, "m4-weekly", DataSet(**{
        **{f.name: getattr(entry, f.name) for f in dataclasses.fields(entry)},
        "files": tuple(RemoteFile(r.url, len(files[r.file_name]), sha256(files[r.file_name]))
                       for r in entry.files),
    }))
    for name, data in files.items():
        mirror.put("m4-weekly", name, data)
    with pytest.raises(DataError, match=r"series 'W2' has 1 test values; expected the horizon, "
                                        r"13"):
        panel.read_m4_folder("m4-weekly", "weekly")
    read = panel.read_m4(datasets.path("m4-weekly") / "Weekly-train.csv",
                         datasets.path("m4-weekly") / "Weekly-test.csv")
    assert read.ids == ("W1", "W2")
    assert [v.tolist() for v in read.values] == [[1, 2, 3], [5, 6]]
    assert [v.tolist() for v in read.holdout] == [[4], [7]]
    assert sorted(mirror.requests) == ["/m4-weekly/Weekly-test.csv",
                                       "/m4-weekly/Weekly-train.csv"]


def test_charrnn_trains_on_a_name_and_the_run_keeps_the_name(mirror, monkeypatch, tmp_path):
    serve_file(mirror, monkeypatch, "tiny-text", "input.txt", TEXT)
    run = tmp_path / "run"
    with contextlib.redirect_stdout(io.StringIO()):
        assert cli.main(["charrnn", "train", "--data", "tiny-text", "--out", str(run),
                         "--units", "8", "--window", "16", "--batch-size", "8", "--epochs", "1",
                         "--embedding-dim", "4", "--sample-chars", "8"]) == 0
    assert json.loads((run / "config.json").read_text())["settings"]["data"] == "tiny-text"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(["charrnn", "evaluate", "--run", str(run), "--data", "tiny-text"]) == 0
    assert "tiny-text, whole text" in out.getvalue()
    assert mirror.requests == ["/tiny-text/input.txt"]


# ---------------------------------------------------------------------------------------------
# seqlab datasets


def run_cli(*arguments):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli.main(list(arguments))
    return status, out.getvalue(), err.getvalue()


def test_datasets_list_info_download_and_path(mirror, monkeypatch, tmp_path):
    entry = serve_file(mirror, monkeypatch, "tiny-text", "input.txt", TEXT)
    status, out, _ = run_cli("datasets", "list")
    assert status == 0
    assert re.search(r"^tiny-text +\d+\.\d kB +no +test set tiny-text$", out, flags=re.M)
    assert re.search(r"^yearly-sunspots +embedded +yes ", out, flags=re.M)
    assert set(datasets.names()) <= {line.split()[0] for line in out.splitlines()}

    status, out, _ = run_cli("datasets", "info", "tiny-text")
    assert status == 0
    for expected in (entry.url, entry.sha256, f"{len(TEXT)} bytes", "license: CC0 (test)",
                     "citation: Test, A. (2026)", f"{mirror.url}/tiny-text/input.txt",
                     "downloaded: no"):
        assert expected in out

    status, _, err = run_cli("datasets", "path", "tiny-text")
    assert status == 2 and "not downloaded yet" in err and err.count("\n") == 1

    local = tmp_path / "cache" / "tiny-text" / "input.txt"
    status, out, err = run_cli("datasets", "download", "tiny-text")
    assert (status, out) == (0, f"{local}\n") and "input.txt" in err
    assert run_cli("datasets", "path", "tiny-text")[:2] == (0, f"{local}\n")


@pytest.mark.parametrize("action", ["info", "download", "path"])
def test_datasets_unknown_name_is_one_line_listing_the_known_ones(action, mirror):
    status, out, err = run_cli("datasets", action, "shakespeare")
    assert status == 2 and out == ""
    assert err.startswith(f"seqlab datasets {action}: error: unknown data set 'shakespeare'; "
                          "the known names are: airline-passengers, ")
    assert "tinyshakespeare" in err and err.count("\n") == 1
    assert mirror.requests == []


def test_datasets_command_imports_no_tensorflow(tmp_path):
    code = (
        "import sys\n"
        "from seqlab.cli import main\n"
        "assert main(['datasets', 'list']) == 0\n"
        "assert main(['datasets', 'info', 'imdb']) == 0\n"
        "heavy = sorted(m for m in ('tensorflow', 'keras', 'pandas') if m in sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    environment = dict(os.environ, SEQLAB_DATA_HOME=str(tmp_path))
    finished = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env=environment, timeout=120)
    assert finished.returncode == 0, finished.stderr
    assert "aclImdb_v1.tar.gz" in finished.stdout


@pytest.mark.parametrize("command", [
    ["charrnn", "train", "--data", "tiny-text"],
    ["ner", "train", "--data", "tiny-text"],
])
def test_a_name_that_cannot_be_downloaded_fails_before_tensorflow_loads(command, tmp_path):
    """The CLI resolves data-set names and downloads them before it imports TensorFlow: a
    machine without internet access hears so in seconds."""
    code = (
        "import sys\n"
        "from seqlab.data import datasets\n"
        "from seqlab.data.datasets import DataSet, RemoteFile\n"
        "datasets.REGISTRY['tiny-text'] = DataSet(name='tiny-text', description='t', files=("
        "RemoteFile('https://origin.invalid/input.txt', 10, '0' * 64),), reader_path='input.txt',"
        f" license='CC0', citation='T', usage='seqlab {command[0]} train --data tiny-text')\n"
        "from seqlab.cli import main\n"
        f"code = main({command!r})\n"
        "heavy = sorted(m for m in ('tensorflow', 'keras') if m in sys.modules)\n"
        "assert not heavy, heavy\n"
        "sys.exit(code)\n"
    )
    environment = dict(os.environ, SEQLAB_DATA_HOME=str(tmp_path / "cache"),
                       SEQLAB_DATA_MIRROR="http://127.0.0.1:9", no_proxy="127.0.0.1",
                       NO_PROXY="127.0.0.1")
    finished = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env=environment, timeout=120, cwd=tmp_path)
    assert finished.returncode == 2, finished.stderr
    error = finished.stderr.strip().splitlines()[-1]
    assert error.startswith(f"seqlab {command[0]} train: error: input.txt: download failed")
    # Not "--data PATH": the name may have been given to --embeddings or --test-data.
    assert "SEQLAB_DATA_MIRROR" in error and "in place of the name 'tiny-text'" in error
    assert not (tmp_path / "cache").exists() and not (tmp_path / "runs").exists()


def test_python_dash_m_seqlab_runs_datasets(tmp_path):
    environment = dict(os.environ, SEQLAB_DATA_HOME=str(tmp_path))
    finished = subprocess.run([sys.executable, "-m", "seqlab", "datasets", "path", "nope"],
                              capture_output=True, text=True, env=environment, timeout=120)
    assert finished.returncode == 2
    assert finished.stderr.startswith("seqlab datasets path: error: unknown data set 'nope'")


# ---------------------------------------------------------------------------------------------
# The real registry


REQUIRED = {
    "tinyshakespeare", "sentence-polarity", "imdb", "wnut17", "multi30k", "airline-passengers",
    "daily-min-temperatures", "monthly-sunspots", "daily-female-births", "yearly-sunspots",
    "glove.6B.50d", "glove.6B.100d", "glove.6B.200d", "glove.6B.300d",
}


def test_the_registry_holds_the_promised_names():
    assert REQUIRED <= set(datasets.names())


@pytest.mark.parametrize("name", sorted(datasets.REGISTRY))
def test_registry_entry_is_well_formed(name):
    data_set = datasets.REGISTRY[name]
    assert data_set.name == name
    assert data_set.license.strip() and data_set.citation.strip()
    assert data_set.description.strip()
    assert data_set.usage.startswith("seqlab ") and name in data_set.usage
    if data_set.embedded:
        assert not data_set.files and datasets.download(name).is_file()
        return
    assert data_set.files
    file_names = [remote.file_name for remote in data_set.files]
    assert len(set(file_names)) == len(file_names)
    for remote in data_set.files:
        assert remote.url.startswith("https://"), remote.url
        assert re.fullmatch(r"[0-9a-f]{64}", remote.sha256), remote.sha256
        assert remote.size > 0
        assert remote.unpack in datasets.UNPACK_KINDS
        assert remote.file_name.endswith({"none": "", "gz": ".gz", "tar.gz": ".tar.gz",
                                          "zip": ".zip"}[remote.unpack])
        assert (remote.member is not None) == (remote.unpack in ("tar.gz", "zip"))
        if remote.unpacked_sha256 is not None:
            assert re.fullmatch(r"[0-9a-f]{64}", remote.unpacked_sha256)
        if "raw.githubusercontent.com" in remote.url:
            # Pinned to a commit, so the bytes behind the hash never change.
            assert re.search(r"/[0-9a-f]{40}/", remote.url), remote.url
    products = {remote.product for remote in data_set.files}
    assert data_set.reader_path == "." or data_set.reader_path in products


def test_the_glove_names_share_one_archive_and_folder():
    archives = {datasets.REGISTRY[f"glove.6B.{d}d"].files[0] for d in (50, 100, 200, 300)}
    assert {(r.url, r.size, r.sha256) for r in archives} == {
        ("https://nlp.stanford.edu/data/glove.6B.zip", 862182613,
         "617afb2fe6cbd085c235baf7a465b96f4112bd7f7ccb2b2cbd649fed9cbcf2fb")
    }
    assert {datasets.REGISTRY[f"glove.6B.{d}d"].cache_folder for d in (50, 100)} == {"glove.6B"}
