"""Public data sets and word vectors by name: a registry, a checked download cache, `resolve_path`.

Every task's `--data` takes a registered name as well as a path (`seqlab charrnn train --data
tinyshakespeare`); the readers in `data/` pass what they are given through `resolve_path`, which
downloads a named set on first use and returns the file or folder the task's reader expects. A
path that exists always wins over a name.

Conventions (those of `keras.utils.get_file`, without importing Keras, so that `seqlab datasets
list` is fast):

- The cache is `~/.keras/datasets/seqlab/<name>/` (`$KERAS_HOME/datasets/seqlab/` when
  `KERAS_HOME` is set), or `$SEQLAB_DATA_HOME/<name>/`. The GloVe names share one folder,
  `glove.6B/`, because they come from one archive.
- Each file is downloaded as it is served at its origin (a pinned commit where there is one),
  with a progress bar on stderr, and checked against its registered size and SHA-256. Archives
  are then extracted (`.tar.gz`, `.zip`, `.gz`); the archives stay in the cache, as Keras keeps
  them.
- Nothing half-written is ever trusted: a file is written to a hidden temporary name in its
  final folder and renamed into place only once complete and checked, and an archive is
  extracted into a hidden temporary folder that is renamed into place. So a name counts as
  downloaded exactly when its final files exist, as they were: each use checks a file's size
  and an extracted folder's file count and total size (kept in a hidden
  `.<folder>.manifest.json` beside it when extracted) and refuses one changed since. A failed
  download, a wrong checksum or Ctrl-C removes the temporary file; a killed process may leave
  a hidden `.*.part` file or `.*.unpacking` folder, which no run reads and the next download
  of that folder removes once it is a day old. Two processes downloading the same name at
  once each write their own temporary files; the renames replace identical content, so the
  last one wins harmlessly.
- `SEQLAB_DATA_MIRROR=URL` fetches `URL/<name>/<file name at its origin>` instead of the
  origin (`URL/glove.6B/glove.6B.zip` for the GloVe names), for machines without internet
  access and for tests (a folder's path stands for its file:// URL). The checksums apply to
  mirrored files alike.

Choices of origin, where there were several:

- `sentence-polarity`: the UTF-8 copies of `rt-polarity.pos` / `.neg` in
  dennybritz/cnn-text-classification-tf at a pinned commit, not the authors' archive
  (cs.cornell.edu `rt-polaritydata.tar.gz`). The authors' files are Windows-1252 text, which
  seqlab's readers (UTF-8 only) refuse; the copies are those files decoded as cp1252 and
  re-encoded as UTF-8 (re-encoding them as cp1252 gives the archive members' published hashes
  byte for byte), their SHA-256 was computed from the fetched files, and they are the bytes the
  figures in docs/performance.md were measured on. The archive's SHA-256 is only known from
  third-party manifests, and a transcoded file would no longer match any published hash.
- `wnut17`: the dev file as released for the 2017 shared task (commit b0c67a9, the same file at
  every commit from 2017-07-19 to 2017-08-24), the bytes docs/performance.md measured; train and
  test are pinned at master (e52a2d2), identical to the files measured. Master has since
  corrected two lines of the dev file (line 1674, an `I-creative-work` that starts an entity,
  and line 16742, which holds only U+FEFF); the NER reader copes with both (an invalid tag
  sequence, an invisible character), and pinning the release keeps the published figures
  reproducible.
"""

import dataclasses
import gzip
import hashlib
import http.client
import importlib.util
import json
import os
import re
import shutil
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

from seqlab.data.errors import DataError

DATA_HOME_VARIABLE = "SEQLAB_DATA_HOME"
MIRROR_VARIABLE = "SEQLAB_DATA_MIRROR"
UNPACK_KINDS = ("none", "gz", "tar.gz", "zip")

# Seconds without progress after which a download is given up.
DOWNLOAD_TIMEOUT = 60
# Leftovers of a killed download or extraction older than this are removed by the next one.
STALE_SECONDS = 24 * 3600
_CHUNK_BYTES = 1 << 16
_PART_SUFFIX = ".part"
_UNPACKING_SUFFIX = ".unpacking"
_MANIFEST_SUFFIX = ".manifest.json"  # beside an extracted folder: what the archive held


@dataclasses.dataclass(frozen=True)
class RemoteFile:
    """One file as served at its origin, and what is extracted from it.

    Attributes:
        url: the origin URL (https, a pinned commit where there is one).
        size: the size in bytes of the file as served.
        sha256: its SHA-256, 64 lowercase hex digits.
        unpack: "none" (used as downloaded), "gz" (decompressed beside it, the name without
            `.gz`), "tar.gz" (the folder `member` extracted beside it) or "zip" (the file
            `member` extracted beside it).
        member: the folder ("tar.gz") or file ("zip") taken from the archive.
        unpacked_sha256: the SHA-256 of the decompressed file ("gz"), checked when given.
        unpacked_size: the decompressed file's size in bytes ("gz"). With `unpacked_sha256`,
            a mirror may serve the decompressed file (`product`) instead of the archive.
    """

    url: str
    size: int
    sha256: str
    unpack: str = "none"
    member: str | None = None
    unpacked_sha256: str | None = None
    unpacked_size: int | None = None

    @property
    def file_name(self):
        """The file's name at its origin (and in the cache and on a mirror)."""
        return self.url.rsplit("/", 1)[-1]

    @property
    def product(self):
        """The name, in the cache folder, of what a task reads from this file."""
        if self.unpack == "gz":
            return self.file_name.removesuffix(".gz")
        if self.unpack in ("tar.gz", "zip"):
            return self.member
        return self.file_name


@dataclasses.dataclass(frozen=True)
class DataSet:
    """A registered data set: where its files come from and what a task reads.

    Attributes:
        name: the name `--data` takes.
        description: what it is, one line.
        files: the `RemoteFile`s to download (none for an embedded set).
        reader_path: what the task's reader gets, relative to the cache folder ("." for the
            folder itself).
        license: its license as its origin states it (or that none is stated).
        citation: what to cite.
        usage: a command line that reads it.
        folder: the cache folder's name (default: `name`).
        embedded: for a set that ships inside an installed package, the package ("statsmodels");
            `reader_path` is then relative to that package's folder and nothing is downloaded.
    """

    name: str
    description: str
    files: tuple
    reader_path: str
    license: str
    citation: str
    usage: str
    folder: str | None = None
    embedded: str | None = None

    @property
    def cache_folder(self):
        return self.folder or self.name

    @property
    def download_size(self):
        return sum(remote.size for remote in self.files)


_TIME_SERIES_COMMIT = (
    "https://raw.githubusercontent.com/jbrownlee/Datasets/d20fcb6402ae34e653d4513b00f39257bb37ed7f"
)
_TIME_SERIES_LICENSE = (
    "none stated (jbrownlee/Datasets has no LICENSE file); data from the Time Series Data "
    "Library (R. J. Hyndman)"
)
_WNUT17_COMMIT = "https://raw.githubusercontent.com/leondz/emerging_entities_17/"
_WNUT17_CITATION = (
    "Derczynski, L., Nichols, E., van Erp, M., Limsopatham, N. (2017) Results of the WNUT2017 "
    "Shared Task on Novel and Emerging Entity Recognition. W-NUT 2017, doi:10.18653/v1/W17-4418"
)
_MULTI30K_RAW = (
    "https://raw.githubusercontent.com/multi30k/dataset/a3d2e0d26b56f3846f66a952536ffed4e401d05a"
    "/data/task1/raw/"
)
_POLARITY_COPY = (
    "https://raw.githubusercontent.com/dennybritz/cnn-text-classification-tf/"
    "18762b459e21d9c70e5c242f8d43fc4e6db37a0d/data/rt-polaritydata/"
)
# M4 (Makridakis et al.): the organisers' repository at a pinned commit. Only the hourly and
# weekly files are registered: their SHA-256 were computed from the fetched files. The daily,
# monthly, quarterly and yearly files live at the same commit (Dataset/Train/<F>-train.csv,
# Dataset/Test/<F>-test.csv), but their hashes have not been computed here, and a name is only
# registered with a checked hash.
_M4_COMMIT = (
    "https://raw.githubusercontent.com/Mcompetitions/M4-methods/"
    "6c1067e5a57161249b17289a565178dc7a3fb3ca/Dataset/"
)
_M4_CITATION = (
    "Makridakis, S., Spiliotis, E., Assimakopoulos, V. (2020) The M4 Competition: 100,000 time "
    "series and 61 forecasting methods. International Journal of Forecasting 36(1), 54-74, "
    "doi:10.1016/j.ijfor.2019.04.014"
)
_GLOVE_ZIP = dict(
    url="https://nlp.stanford.edu/data/glove.6B.zip",
    size=862182613,
    sha256="617afb2fe6cbd085c235baf7a465b96f4112bd7f7ccb2b2cbd649fed9cbcf2fb",
    unpack="zip",
)


def _time_series(name, file_name, size, sha256, description, source, usage):
    return DataSet(
        name=name,
        description=description,
        files=(RemoteFile(f"{_TIME_SERIES_COMMIT}/{file_name}", size, sha256),),
        reader_path=file_name,
        license=_TIME_SERIES_LICENSE,
        citation=f"{source}, via the Time Series Data Library (R. J. Hyndman)",
        usage=usage,
    )


def _m4(frequency, description, train, test):
    """An M4 frequency: its training and test files, read by `data.panel.read_m4_folder`."""
    name = frequency.capitalize()
    return DataSet(
        name=f"m4-{frequency}",
        description=description,
        files=(RemoteFile(f"{_M4_COMMIT}Train/{name}-train.csv", *train),
               RemoteFile(f"{_M4_COMMIT}Test/{name}-test.csv", *test)),
        reader_path=".",
        license=(
            "none stated in the repository; published by the competition's organisers for "
            "research use (repository README)"
        ),
        citation=_M4_CITATION,
        usage=f"seqlab timeseries train --data m4-{frequency}",
    )


def _glove(dimension):
    return DataSet(
        name=f"glove.6B.{dimension}d",
        description=(
            f"GloVe word vectors, {dimension} dimensions, 400,000 lowercased words (Wikipedia "
            "2014 + Gigaword 5, 6B tokens); text, one word and its vector per line"
        ),
        files=(RemoteFile(member=f"glove.6B.{dimension}d.txt", **_GLOVE_ZIP),),
        reader_path=f"glove.6B.{dimension}d.txt",
        license="Public Domain Dedication and License (PDDL) (stanfordnlp/GloVe README)",
        citation=(
            "Pennington, J., Socher, R., Manning, C.D. (2014) GloVe: Global Vectors for Word "
            "Representation. EMNLP 2014"
        ),
        usage=f"seqlab datasets download glove.6B.{dimension}d",
        folder="glove.6B",
    )


def _multi30k_file(stem, lang, size, sha256, unpacked_size, unpacked_sha256):
    return RemoteFile(f"{_MULTI30K_RAW}{stem}.{lang}.gz", size, sha256, unpack="gz",
                      unpacked_sha256=unpacked_sha256, unpacked_size=unpacked_size)


_DATA_SETS = (
    DataSet(
        name="tinyshakespeare",
        description="Tiny Shakespeare: 1,115,394 characters of plays, one text file (input.txt)",
        files=(RemoteFile(
            "https://raw.githubusercontent.com/karpathy/char-rnn/"
            "6f9487a6fe5b420b7ca9afb0d7c078e37c1d1b4e/data/tinyshakespeare/input.txt",
            1115394, "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed",
        ),),
        reader_path="input.txt",
        license="text: Shakespeare, public domain; repository (karpathy/char-rnn): MIT",
        citation="Karpathy, A. (2015) char-rnn, https://github.com/karpathy/char-rnn",
        usage="seqlab charrnn train --data tinyshakespeare",
    ),
    DataSet(
        name="sentence-polarity",
        description=(
            "sentence polarity v1.0: 5,331 positive and 5,331 negative movie-review snippets, "
            "one per line (rt-polarity.pos, rt-polarity.neg, UTF-8)"
        ),
        files=(
            RemoteFile(f"{_POLARITY_COPY}rt-polarity.pos", 626395,
                       "4134882974a28d0c7b5151256f0e33a6169984ee7372c279e673f1114f475d58"),
            RemoteFile(f"{_POLARITY_COPY}rt-polarity.neg", 612506,
                       "2d11cfbc790f1cd96d78339f41ce53ced1efa83cd22d37d6788fa3fe3d17e2fd"),
        ),
        reader_path=".",
        license="none stated by the authors",
        citation=(
            "Pang, B. & Lee, L. (2005) Seeing stars: Exploiting class relationships for "
            "sentiment categorization with respect to rating scales. ACL 2005"
        ),
        usage="seqlab sentiment train --data sentence-polarity",
    ),
    DataSet(
        name="imdb",
        description=(
            "IMDB large movie review data v1.0: 25,000 training and 25,000 test reviews, "
            "positive and negative (the aclImdb folders; train/unsup holds 50,000 unlabelled "
            "ones: pass --classes neg pos)"
        ),
        files=(RemoteFile(
            "https://ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz", 84125825,
            "c40f74a18d3b61f90feba1e17730e0d38e8b97c05fde7008942e91923d1658fe",
            unpack="tar.gz", member="aclImdb",
        ),),
        reader_path="aclImdb",
        license="none stated",
        citation=(
            "Maas, A.L., Daly, R.E., Pham, P.T., Huang, D., Ng, A.Y., Potts, C. (2011) Learning "
            "Word Vectors for Sentiment Analysis. ACL-HLT 2011"
        ),
        usage="seqlab sentiment train --data imdb --classes neg pos --sequence-length 256",
    ),
    DataSet(
        name="wnut17",
        description=(
            "WNUT-17 emerging entities, social-media text in CoNLL format: wnut17train.conll, "
            "emerging.dev.conll (2017 release), emerging.test.annotated (3,394 / 1,009 / 1,287 "
            "sentences)"
        ),
        files=(
            RemoteFile(
                f"{_WNUT17_COMMIT}e52a2d2a71ac1a051ca2d532eef28653c5c02603/wnut17train.conll",
                493781, "731820e13f71af324c6b55a1575ec2ce59fbaa2a0806f8f0400b98d56cd6a7a5",
            ),
            RemoteFile(
                f"{_WNUT17_COMMIT}b0c67a94bebabf4892093dc659756b6eeb10949d/emerging.dev.conll",
                114752, "eddb4c7250f563f3746df0bfd00057cde948dfbb75140a753cdb2c27f82f0f66",
            ),
            RemoteFile(
                f"{_WNUT17_COMMIT}e52a2d2a71ac1a051ca2d532eef28653c5c02603/"
                "emerging.test.annotated",
                192425, "2aa79b764e56ec9264a1b30fdd9b70195bd00ff400b62edd8f399d5f13c178f0",
            ),
        ),
        reader_path=".",
        license="CC BY 4.0 (repository README)",
        citation=_WNUT17_CITATION,
        usage="seqlab ner train --data wnut17 --crf",
    ),
    DataSet(
        name="multi30k",
        description=(
            "Multi30k task 1, English-German image captions: train, val, test_2016_flickr "
            ".en / .de (29,000 / 1,014 / 1,000 pairs)"
        ),
        files=(
            _multi30k_file("train", "en", 568929,
                           "d79cfa999dd4c51d2cb42499b6796d5a882c3a8a961923c25a898c90f8bbd56f",
                           1801238,
                           "460a15fbd157e34a7a9957ee388c1ca247fe47af3ef25fb50442af6c274e0fc6"),
            _multi30k_file("train", "de", 637044,
                           "726e39b2fa9eb9ffb6dc763fb35a179f80fae06ffc5d28b6ace5faa883de28a6",
                           2110398,
                           "2c2b73fd2b548fbcde3a875e0a78d6ee94d498bfdee6bd3eae3945779e9ddf72"),
            _multi30k_file("val", "en", 21650,
                           "14f7d25ddd868909a9213e361768460edcacdd6ab9d1e77b92560dc10c10dc28",
                           63297,
                           "1f2a23d992769b5b3d209b0a10dd0b77c08cceb1f20dfb97ed0aafa49d107227"),
            _multi30k_file("val", "de", 24681,
                           "f0cba2f995189cf5770f29a8a9a537a3ad3f51657ad873405082ff6863a5e75a",
                           75981,
                           "660e09eb7e1da2f856ea13ee5ad3cf6d36b3d5b0b733c857e94c5747a3dfc660"),
            _multi30k_file("test_2016_flickr", "en", 21077,
                           "611d361c6334bc7246101d48097c13cf5c4413c5befc793cc629934359d532d9",
                           62076,
                           "399a4382932c1aadd3ceb9bef1008d388a64c76d4ae4e9d4728c6f4301cac182"),
            _multi30k_file("test_2016_flickr", "de", 22890,
                           "9204244e408ccb38d2a55cfcd344df15005fc42a07a6e55ca6c52b6ababb8cc8",
                           70649,
                           "4be6b5b3236b79c25475c6bb829800a7ce559e9ba7a1f6c2394fe4d40be46d16"),
        ),
        reader_path=".",
        license=(
            "none stated (no LICENSE file); derived from Flickr30K, images under the Flickr "
            "Terms of Use, for non-commercial research and educational use"
        ),
        citation=(
            "Elliott, D., Frank, S., Sima'an, K., Specia, L. (2016) Multi30K: Multilingual "
            "English-German Image Descriptions. 5th Workshop on Vision and Language, "
            "doi:10.18653/v1/W16-3210"
        ),
        usage="seqlab translate train --data multi30k --src-lang en --tgt-lang de",
    ),
    _time_series(
        "airline-passengers", "airline-passengers.csv", 2180,
        "8cb51be753a718d9be5d76d7e238cc224792754676adc21faa59e954b0201621",
        "monthly international airline passengers (thousands), 1949-1960 (144 rows; CSV with "
        "Month and Passengers)",
        "Box & Jenkins (1976)",
        "seqlab timeseries train --data airline-passengers --lookback 24",
    ),
    _time_series(
        "daily-min-temperatures", "daily-min-temperatures.csv", 67921,
        "8b9de63ed6789492bf497625e7f9beb96a63d367b4b0a21754006f749fa5e5da",
        "daily minimum temperatures in Melbourne, 1981-1990 (3,650 rows; CSV with Date and "
        "Temp)",
        "Australian Bureau of Meteorology",
        "seqlab timeseries train --data daily-min-temperatures --lookback 30",
    ),
    _time_series(
        "monthly-sunspots", "monthly-sunspots.csv", 45039,
        "c4ec8cc57d9f6fb6ecdb3e1f37f25b6f4badd5124c55931052b0cd2fc3bc71f3",
        "monthly sunspot counts, 1749-1983 (2,820 rows; CSV with Month and Sunspots)",
        "Andrews & Herzberg (1985)",
        "seqlab timeseries train --data monthly-sunspots --lookback 48",
    ),
    _time_series(
        "daily-female-births", "daily-total-female-births.csv", 6220,
        "7a0c1bdb32d68f7fa359e561a4f7e1fe8fb2fc26a1ea624a434a97a63735dd72",
        "daily total female births in California, 1959 (365 rows; CSV with Date and Births)",
        "Newton (1988)",
        "seqlab timeseries train --data daily-female-births --lookback 14",
    ),
    DataSet(
        name="yearly-sunspots",
        description=(
            "yearly sunspot numbers, 1700-2008 (309 rows; CSV with YEAR and SUNACTIVITY), "
            "embedded in statsmodels: the default data of seqlab timeseries"
        ),
        files=(),
        reader_path="datasets/sunspots/sunspots.csv",
        license="public domain (statsmodels: 'This data is public domain.')",
        citation="National Geophysical Data Center (NOAA), via statsmodels.datasets.sunspots",
        usage="seqlab timeseries train --data yearly-sunspots",
        embedded="statsmodels",
    ),
    _m4("hourly",
        "M4 competition, hourly: 414 series of 700 to 960 values, 48 to forecast (wide CSV: "
        "Hourly-train.csv, Hourly-test.csv)",
        (2347115, "ea59b7783573c49077a835ab6465c7d66f1474783360f310988a9a737fbca62f"),
        (132820, "71a57fccb15e534d973626ada4fb87febf789e9317715b7cc6dd3b5f90db6f42")),
    _m4("weekly",
        "M4 competition, weekly: 359 series of 80 to 2,597 values, 13 to forecast (wide CSV: "
        "Weekly-train.csv, Weekly-test.csv)",
        (4015067, "d478d3f6ed673e6ed3c2cb0fbed5425f72eedd51318ebebeb0b5ecfcefc37714"),
        (44247, "3b2bc4be8e636e802260dcd843ca3c5da40536a1fbe1ecb3229a97dae4f44688")),
    *(_glove(dimension) for dimension in (50, 100, 200, 300)),
)

REGISTRY = {data_set.name: data_set for data_set in _DATA_SETS}
"""The registered data sets by name (tests may add entries with `monkeypatch.setitem`)."""


# ---------------------------------------------------------------------------------------------
# Looking up


def names():
    """The registered names, sorted (numbers by value: glove.6B.50d before glove.6B.100d)."""
    return sorted(REGISTRY, key=lambda name: [int(part) if part.isdigit() else part
                                              for part in re.split(r"(\d+)", name)])


def get(name):
    """The `DataSet` registered as `name`.

    Raises:
        DataError: an unknown name, listing the known ones.
    """
    try:
        return REGISTRY[name]
    except (KeyError, TypeError):
        raise DataError(
            f"unknown data set {name!r}; the known names are: {', '.join(names())}"
        ) from None


def is_name(value):
    """Whether `resolve_path(value)` reads `value` as a registered name: it is one, and no file
    or folder of that name exists (a path wins over a name)."""
    return isinstance(value, str) and value in REGISTRY and not Path(value).exists()


def data_home():
    """The cache root: `$SEQLAB_DATA_HOME`, else `$KERAS_HOME/datasets/seqlab`, else
    `~/.keras/datasets/seqlab`."""
    configured = os.environ.get(DATA_HOME_VARIABLE)
    if configured:
        return Path(configured).expanduser()
    keras_home = os.environ.get("KERAS_HOME") or os.path.join("~", ".keras")
    return Path(keras_home).expanduser() / "datasets" / "seqlab"


def _folder(data_set):
    return data_home() / data_set.cache_folder


def _embedded_path(data_set):
    spec = importlib.util.find_spec(data_set.embedded)
    if spec is None or spec.origin is None:
        raise DataError(
            f"data set {data_set.name!r} ships with the Python package {data_set.embedded}, "
            "which is not installed"
        )
    path = Path(spec.origin).parent / data_set.reader_path
    if not path.is_file():
        raise DataError(
            f"data set {data_set.name!r}: the installed {data_set.embedded} lacks this file",
            path=path,
        )
    return path


def _local_path(data_set):
    if data_set.embedded:
        return _embedded_path(data_set)
    folder = _folder(data_set)
    return folder if data_set.reader_path == "." else folder / data_set.reader_path


def is_downloaded(name):
    """Whether every file `name`'s task reads is in the cache as it was downloaded (always
    true of embedded sets): a file or extracted folder changed since (`cache_fault`) is not."""
    data_set = get(name)
    if data_set.embedded:
        return True
    return _all_cached(data_set) and cache_fault(name) is None


def _all_cached(data_set):
    folder = _folder(data_set)
    return all((folder / remote.product).exists() for remote in data_set.files)


def cache_fault(name):
    """The `DataError` naming the first of `name`'s cached files or extracted folders changed
    since its download (another size; a folder holding other files than its archive had), or
    None. Sizes and file counts only: hashing every use would cost seconds on the large sets,
    and a download checks both."""
    data_set = get(name)
    if data_set.embedded:
        return None
    folder = _folder(data_set)
    for remote in data_set.files:
        try:
            _check_cached(folder / remote.product, remote, name)
        except DataError as error:
            return error
    return None


def mirror_url(data_set, remote):
    """Where `remote` is fetched from: `$SEQLAB_DATA_MIRROR/<folder>/<file name>`, or its
    origin when no mirror is set."""
    mirror = _mirror()
    if not mirror:
        return remote.url
    return f"{mirror.rstrip('/')}/{data_set.cache_folder}/{remote.file_name}"


def _mirror():
    """`$SEQLAB_DATA_MIRROR` as a URL (None where unset): a folder's path is its file:// URL.

    Raises:
        DataError: neither a URL nor an existing folder.
    """
    mirror = os.environ.get(MIRROR_VARIABLE)
    if not mirror or "://" in mirror:
        return mirror or None
    folder = Path(mirror).expanduser()
    if not folder.is_dir():
        raise DataError(f"{MIRROR_VARIABLE}={mirror} is neither a URL (http://, https:// or "
                        "file://) nor a folder: expected the mirror's URL or its folder")
    return folder.absolute().as_uri()


def info(name):
    """What is known about `name`, as a dict of plain values.

    Keys: name, description, license, citation, usage, embedded (the package it ships in, or
    None), files (`url`, `file`, `size`, `sha256`, `unpack` of each download), download_size
    (bytes), downloaded, changed (why a cached file or folder is no longer the download, or
    None), path (the local path a task reads), fetched_from (the URLs actually used, which
    differ from the origins when `SEQLAB_DATA_MIRROR` is set).

    Raises:
        DataError: an unknown name.
    """
    data_set = get(name)
    cached = data_set.embedded or _all_cached(data_set)
    fault = cache_fault(name) if cached else None
    return {
        "name": data_set.name,
        "description": data_set.description,
        "license": data_set.license,
        "citation": data_set.citation,
        "usage": data_set.usage,
        "embedded": data_set.embedded,
        "files": [
            {"url": r.url, "file": r.file_name, "size": r.size, "sha256": r.sha256,
             "unpack": r.unpack}
            for r in data_set.files
        ],
        "download_size": data_set.download_size,
        "downloaded": bool(cached and fault is None),
        "changed": None if fault is None else str(fault),
        "path": str(_local_path(data_set)),
        "fetched_from": [mirror_url(data_set, r) for r in data_set.files],
    }


def path(name):
    """The local path a task reads for `name`, without downloading.

    Raises:
        DataError: an unknown name, or a set not downloaded yet (the message says how).
    """
    data_set = get(name)
    if not data_set.embedded and not _all_cached(data_set):
        raise DataError(
            f"data set {name!r} is not downloaded yet (cache: {_folder(data_set)}); run "
            f"`seqlab datasets download {name}`, or pass --data {name}, which downloads it"
        )
    fault = cache_fault(name)
    if fault is not None:
        raise fault
    return _local_path(data_set)


def download(name, progress=None):
    """Downloads, checks and extracts `name` unless its files are in the cache already.

    Args:
        name: a registered name.
        progress: the stream for progress bars (default: `sys.stderr`); False for none.

    Returns:
        The local path a task reads (`path(name)`).

    Raises:
        DataError: an unknown name, a failed or interrupted download (the message names
            `SEQLAB_DATA_MIRROR` and a local path as the ways without internet access), a
            size or checksum that differs from the registered one (naming the file and both
            sizes or hashes), or a damaged archive. Nothing of a failed file is left in the
            cache, nor a cache folder this call created and left empty.
    """
    data_set = get(name)
    if data_set.embedded:
        return _embedded_path(data_set)
    folder = _folder(data_set)
    stream = sys.stderr if progress is None else progress
    created = []
    try:
        for remote in data_set.files:
            if (folder / remote.product).exists():
                _check_cached(folder / remote.product, remote, name)
                continue
            if not created:
                created = _make_folder(folder)
            _remove_stale_leftovers(folder)
            archive = folder / remote.file_name
            cached = archive.exists()
            if cached:  # an archive kept from an earlier download, extracted again
                _check_size(archive, remote.size, name, "archive")
            else:
                fetched = _fetch_remote(data_set, remote, folder, stream)
                if fetched != archive:  # the mirror served the decompressed file
                    continue
            if remote.unpack != "none":
                _unpack(archive, remote, folder, cached)
    except BaseException:
        _remove_empty_folders(created)
        raise
    return _local_path(data_set)


def _cache_state(name):
    """"yes", "no", or "changed" (in the cache, but changed since its download)."""
    data_set = get(name)
    if not data_set.embedded and not _all_cached(data_set):
        return "no"
    return "yes" if cache_fault(name) is None else "changed"


def _check_cached(product, remote, name):
    """Refuses a cached file whose size is no longer the registered one (a command's output
    written over it, an edit), or an extracted folder that no longer holds the files its
    archive had (some deleted): a task would read it as the data set. Sizes and file counts
    only: hashing every use would cost seconds on the large sets; a download checks both."""
    if product.is_dir():
        _check_extracted_folder(product, name)
        return
    size = (remote.size if remote.unpack == "none" else
            remote.unpacked_size if remote.unpack == "gz" else None)
    if size is not None and product.is_file():
        _check_size(product, size, name, "file")


def _check_size(path, size, name, what):
    found = path.stat().st_size
    if found != size:
        raise DataError(f"the cached {what} of {name} has {found:,} bytes, not the registered "
                        f"{size:,}: it was changed after the download; delete it, and the next "
                        f"use (or seqlab datasets download {name}) fetches it again",
                        path=path)


def _manifest_path(folder):
    return folder.parent / f".{folder.name}{_MANIFEST_SUFFIX}"


def _folder_contents(folder):
    """`{"files": count, "bytes": total size}` of the files under `folder`."""
    count = total = 0
    for root, _, files in os.walk(folder):
        for file in files:
            count += 1
            total += os.stat(os.path.join(root, file), follow_symlinks=False).st_size
    return {"files": count, "bytes": total}


def _check_extracted_folder(folder, name):
    """Refuses an extracted folder whose files are not those its archive held (the manifest
    written at extraction; a folder extracted before seqlab wrote one is not checked)."""
    try:
        expected = json.loads(_manifest_path(folder).read_text(encoding="utf-8"))
        files, size = int(expected["files"]), int(expected["bytes"])
    except (OSError, ValueError, KeyError, TypeError):
        return
    found = _folder_contents(folder)
    if (found["files"], found["bytes"]) != (files, size):
        raise DataError(f"the cached folder of {name} holds {found['files']:,} files "
                        f"({found['bytes']:,} bytes), not the {files:,} files ({size:,} bytes) "
                        f"extracted from its archive: it was changed after the download; "
                        f"delete it, and the next use (or seqlab datasets download {name}) "
                        "extracts it again", path=folder)


def _make_folder(folder):
    """Creates `folder` and its missing parents; returns those it created, deepest first."""
    missing = [p for p in (folder, *folder.parents) if not p.exists()]
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        _remove_empty_folders(missing)
        raise DataError(f"cannot create the data-set cache ({error.strerror}); set "
                        f"{DATA_HOME_VARIABLE} to a folder you can write", path=folder)
    return missing


def _remove_empty_folders(folders):
    """Removes each of `folders` (deepest first) that is empty: only folders this process
    created are passed, and a folder something was written into stays."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:  # not empty (or gone): kept
            return


def _offline_hint(data_set, remote, names):
    """What to do without internet access, for a failed download of `remote`."""
    mirror = os.environ.get(MIRROR_VARIABLE)
    served = " or ".join(f"<URL>/{data_set.cache_folder}/{name}" for name in names)
    hint = (f"without internet access, set {MIRROR_VARIABLE}=URL to a mirror serving {served} "
            f"(http://, https:// or file://, or a folder), or give a local file or folder in "
            f"place of the name {data_set.name!r} (`seqlab datasets info {data_set.name}` "
            "lists the files)")
    if mirror:
        hint = f"{MIRROR_VARIABLE} is {mirror}; " + hint
    return hint


def _fetch_remote(data_set, remote, folder, stream):
    """Fetches `remote` into `folder` from the mirror or the origin; returns the path written.

    A mirror may serve a ".gz" file decompressed (its `product`, checked against the
    decompressed size and SHA-256) when it does not hold the archive.
    """
    archive = folder / remote.file_name
    url = mirror_url(data_set, remote)
    plain = None
    names = [remote.file_name]
    if (_mirror() and remote.unpack == "gz"
            and remote.unpacked_sha256 and remote.unpacked_size is not None):
        plain = RemoteFile(url.rsplit("/", 1)[0] + "/" + remote.product, remote.unpacked_size,
                           remote.unpacked_sha256)
        names.append(remote.product)
    try:
        try:
            _fetch(url, archive, remote, stream)
            return archive
        except _NotFoundError:
            if plain is None:
                raise
        _fetch(plain.url, folder / plain.file_name, plain, stream)
        return folder / plain.file_name
    except _NetworkError as error:
        raise DataError(f"{error.message}; {_offline_hint(data_set, remote, names)}",
                        path=error.path) from None


def resolve_path(value):
    """The local path of `value`: a path as given, or a registered name, downloaded if needed.

    An existing file or folder is returned unchanged (a path wins over a name). A registered
    name is downloaded unless it is in the cache, and the path its task's reader expects is
    returned. Anything else comes back as `Path(value)`, so that the caller reports it as not
    found.

    Raises:
        DataError: a named set that cannot be downloaded (see `download`).
    """
    candidate = Path(value)
    if is_name(value):
        return download(value)
    return candidate


# ---------------------------------------------------------------------------------------------
# Downloading and extracting


def _temporary_file(final):
    """A new hidden file beside `final`: `(open binary file, path)`, readable as a file
    written with the user's umask is (mkstemp's own mode, 0600, would keep a shared cache's
    files from its other users)."""
    try:
        handle, name = tempfile.mkstemp(prefix=f".{final.name}.", suffix=_PART_SUFFIX,
                                        dir=final.parent)
    except OSError as error:
        raise _unwritable(error, final.parent) from None
    os.chmod(handle, 0o666 & ~_umask())
    return os.fdopen(handle, "wb"), Path(name)


def _umask():
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


class _CacheUnwritable(DataError):
    """The cache folder refuses a new file."""


def _unwritable(error, folder):
    return _CacheUnwritable(f"cannot write into the data-set cache ({error.strerror or error}); "
                            f"set {DATA_HOME_VARIABLE} to a folder you can write", path=folder)


def _remove_stale_leftovers(folder):
    """Removes the hidden temporary files and folders of killed runs older than a day."""
    cutoff = time.time() - STALE_SECONDS
    for entry in folder.glob(".*"):
        if not entry.name.endswith((_PART_SUFFIX, _UNPACKING_SUFFIX)):
            continue
        try:
            if entry.stat().st_mtime >= cutoff:
                continue
            if entry.is_dir():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink()
        except OSError:
            pass  # another process removed or finished it


class _NetworkError(DataError):
    """A download that failed for want of a connection or a file at the URL (not a checksum)."""


class _NotFoundError(_NetworkError):
    """The URL names no file (HTTP 404, a missing file:// path)."""


def _fetch(url, target, remote, stream):
    """Downloads `url` into `target`, checked against `remote`'s size and SHA-256; `target`
    appears only when complete and correct."""
    output, temporary = _temporary_file(target)
    try:
        with output:
            received, digest, announced = _copy_url(url, output, remote, stream)
            output.flush()
            os.fsync(output.fileno())
        if received < remote.size:
            if announced is None or announced > received:
                cause = ("the connection was closed early" if announced is not None else
                         "the connection was closed early, or the server holds another file")
                raise _NetworkError(
                    f"the download stopped after {received} of {remote.size} bytes ({cause}) "
                    f"from {url}; nothing was kept, run the command again",
                    path=remote.file_name,
                )
            raise _wrong_file(url, remote, received)
        if digest != remote.sha256:
            raise DataError(
                f"checksum mismatch: expected SHA-256 {remote.sha256}, got {digest} "
                f"({received} bytes from {url}); the file was not kept",
                path=remote.file_name,
            )
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)


def _wrong_file(url, remote, size):
    return DataError(
        f"wrong file: expected {remote.size} bytes (SHA-256 {remote.sha256}), got {size} bytes "
        f"from {url}; the server holds another file than the registered one (a mirror must "
        "serve the files as their origin does); nothing was kept",
        path=remote.file_name,
    )


def _copy_url(url, output, remote, stream):
    """Streams `url` into `output`; returns `(bytes received, SHA-256 hex digest, the size the
    server announced or None)`."""
    request = urllib.request.Request(url, headers={"User-Agent": "seqlab-datasets"})
    digest = hashlib.sha256()
    received = 0
    bar = None
    try:
        with urllib.request.urlopen(request, timeout=DOWNLOAD_TIMEOUT) as response:
            bar = _ProgressBar(remote.file_name, remote.size, stream)
            announced = response.headers.get("Content-Length")
            announced = int(announced) if announced and announced.isdigit() else None
            if announced is not None and announced != remote.size:
                raise _wrong_file(url, remote, announced)
            while chunk := response.read(_CHUNK_BYTES):
                received += len(chunk)
                if received > remote.size:
                    raise _wrong_file(url, remote, f"more than {remote.size}")
                digest.update(chunk)
                output.write(chunk)
                bar.update(received)
    except urllib.error.HTTPError as error:
        kind = _NotFoundError if error.code in (404, 410) else _NetworkError
        reason = " ".join(str(error.reason).split())  # a redirect loop's is three lines
        raise kind(f"download failed: HTTP {error.code} {reason} from {url}",
                   path=remote.file_name) from None
    except urllib.error.URLError as error:
        kind = _NotFoundError if isinstance(error.reason, FileNotFoundError) else _NetworkError
        reason = error.reason.strerror if isinstance(error.reason, OSError) and \
            error.reason.strerror else error.reason
        raise kind(f"download failed: {reason} ({url})", path=remote.file_name) from None
    except http.client.IncompleteRead:  # a chunked answer cut short
        raise _NetworkError(
            f"download failed after {received} of {remote.size} bytes: the connection was "
            f"closed early ({url}); nothing was kept, run the command again",
            path=remote.file_name,
        ) from None
    except OSError as error:  # a reset connection, a timeout
        raise _NetworkError(
            f"download failed after {received} of {remote.size} bytes: {error} ({url}); "
            "nothing was kept, run the command again",
            path=remote.file_name,
        ) from None
    except http.client.HTTPException as error:  # another service at the port (its banner)
        answer = " ".join(str(error).split())[:80]
        raise _NetworkError(
            f"download failed: the server at {url} did not answer in HTTP "
            f"({type(error).__name__}: {answer!r}); check the URL",
            path=remote.file_name,
        ) from None
    finally:
        if bar is not None:
            bar.close()
    return received, digest.hexdigest(), announced


def _unpack(archive, remote, folder, cached=False):
    """Extracts `remote.product` from the checked `archive` into `folder`, renamed into place
    once complete. `cached`: the archive was kept from an earlier download (checked for its
    size only), so a fault in its content says to delete it."""
    target = folder / remote.product
    try:
        if remote.unpack == "tar.gz":
            _unpack_tar(archive, remote.member, target)
        elif remote.unpack == "gz":
            _copy_into_place(gzip.open(archive, "rb"), target, remote.unpacked_sha256)
        else:
            with zipfile.ZipFile(archive) as bundle:
                member = _zip_member(bundle, remote.member, archive)
                _copy_into_place(bundle.open(member), target, None)
    except DataError as error:
        if not cached or isinstance(error, _CacheUnwritable):
            raise
        raise DataError(f"{error.message}; extracted from the cached archive {archive}, "
                        "changed after its download: delete it, and the next use fetches it "
                        "again", path=error.path) from None
    except PermissionError as error:
        raise _unwritable(error, folder) from None
    except (OSError, EOFError, tarfile.TarError, zipfile.BadZipFile) as error:
        raise DataError(f"cannot extract the archive ({error}); delete it and download again",
                        path=archive) from None


def _zip_member(bundle, member, archive):
    try:
        return bundle.getinfo(member)
    except KeyError:
        raise DataError(f"the archive has no member {member!r}", path=archive) from None


def _copy_into_place(source, target, sha256):
    """Copies the stream `source` to `target` through a temporary file, checking `sha256`."""
    output, temporary = _temporary_file(target)
    digest = hashlib.sha256()
    try:
        with source, output:
            while chunk := source.read(_CHUNK_BYTES):
                digest.update(chunk)
                output.write(chunk)
        if sha256 is not None and digest.hexdigest() != sha256:
            raise DataError(
                f"checksum mismatch of the extracted file: expected SHA-256 {sha256}, got "
                f"{digest.hexdigest()}; the file was not kept",
                path=target,
            )
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)


def _unpack_tar(archive, member, target):
    """Extracts the folder `member` of a .tar.gz into a hidden folder, then renames it to
    `target` (another process's identical copy already there is kept)."""
    scratch = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=_UNPACKING_SUFFIX,
                                    dir=target.parent))
    try:
        with tarfile.open(archive, "r:gz") as bundle:
            members = [m for m in bundle.getmembers()
                       if m.name == member or m.name.startswith(f"{member}/")]
            if not members:
                raise DataError(f"the archive has no folder {member!r}", path=archive)
            _extract_safely(bundle, members, scratch, archive)
        contents = _folder_contents(scratch / member)
        try:
            os.rename(scratch / member, target)
        except OSError:
            if not target.is_dir():
                raise
        # What the archive held, for later uses to check (another process's identical copy
        # writes the same).
        output, temporary = _temporary_file(_manifest_path(target))
        try:
            with output:
                output.write(json.dumps(contents).encode("utf-8"))
            os.replace(temporary, _manifest_path(target))
        finally:
            temporary.unlink(missing_ok=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _extract_safely(bundle, members, folder, archive):
    """Extracts `members` of the tar `bundle` into `folder`, refusing any that would land
    outside it (absolute paths, `..`, links) or that is a device."""
    if hasattr(tarfile, "data_filter"):
        bundle.extractall(folder, members=members, filter="data")
        return
    # Pythons before 3.10.12 / 3.11.4 lack extraction filters: the same checks by hand.
    for member in members:
        parts = Path(member.name).parts
        if Path(member.name).is_absolute() or ".." in parts or not (member.isfile()
                                                                    or member.isdir()):
            raise DataError(f"the archive member {member.name!r} is not a plain file or folder "
                            "inside the archive's folder; refused", path=archive)
    bundle.extractall(folder, members=members)


class _ProgressBar:
    """A download's progress on `stream`: redrawn in place on a terminal, else one line at the
    start and one at the end (so that logs stay short)."""

    WIDTH = 30

    def __init__(self, label, total, stream):
        self.label, self.total, self.stream = label, max(total, 1), stream
        self.interactive = bool(stream) and getattr(stream, "isatty", lambda: False)()
        self.received, self.drawn_at = 0, 0.0
        if stream and not self.interactive:
            print(f"downloading {label} ({_megabytes(total)})", file=stream, flush=True)

    def update(self, received):
        self.received = received
        now = time.monotonic()
        if self.interactive and now - self.drawn_at >= 0.1:
            self.drawn_at = now
            self._draw("\r")

    def _draw(self, start, end=""):
        share = min(self.received / self.total, 1.0)
        filled = int(share * self.WIDTH)
        bar = "=" * filled + (">" if filled < self.WIDTH else "") + " " * (self.WIDTH - filled - 1)
        self.stream.write(f"{start}{self.label} [{bar}] {share:4.0%} "
                          f"{_megabytes(self.received)} of {_megabytes(self.total)}{end}")
        self.stream.flush()

    def close(self):
        if self.stream:
            self._draw("\r" if self.interactive else "", "\n")


def _megabytes(size):
    """`size` bytes as text: "2.2 kB", "1.1 MB", "862.2 MB"."""
    return f"{size / 1e3:.1f} kB" if size < 1e6 else f"{size / 1e6:.1f} MB"


# ---------------------------------------------------------------------------------------------
# Text for the command line


def format_list():
    """The registered names as a table: name, download size, whether downloaded, what."""
    rows = [("name", "size", "downloaded", "what")]
    for name in names():
        data_set = REGISTRY[name]
        size = "embedded" if data_set.embedded else _megabytes(data_set.download_size)
        rows.append((name, size, _cache_state(name), data_set.description))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[3]
             for row in rows]
    lines.append(f"cache: {data_home()} (set {DATA_HOME_VARIABLE} to move it; "
                 f"{MIRROR_VARIABLE}=URL fetches from a mirror)")
    return "\n".join(lines)


def format_info(name):
    """What `info(name)` says, as `key: value` lines.

    Raises:
        DataError: an unknown name.
    """
    facts = info(name)
    if facts["embedded"]:
        origin = [f"embedded in the installed package {facts['embedded']}: nothing to download"]
        state = f"yes (embedded): {facts['path']}"
    else:
        origin = [
            f"{entry['url']}\n    {entry['size']} bytes, SHA-256 {entry['sha256']}"
            + (f", extracted ({entry['unpack']})" if entry["unpack"] != "none" else "")
            for entry in facts["files"]
        ]
        if facts["fetched_from"] != [entry["url"] for entry in facts["files"]]:
            origin += [f"fetched from the mirror: {url}" for url in facts["fetched_from"]]
        state = (f"yes: {facts['path']}" if facts["downloaded"] else
                 f"changed after its download: {facts['changed']}" if facts["changed"] else
                 f"no (`seqlab datasets download {name}` puts it in {facts['path']})")
    lines = [
        f"name: {facts['name']}",
        f"what: {facts['description']}",
        f"use: {facts['usage']}",
        f"license: {facts['license']}",
        f"citation: {facts['citation']}",
    ]
    if not facts["embedded"]:
        lines.append(f"size: {_megabytes(facts['download_size'])} to download "
                     f"({facts['download_size']} bytes in {len(facts['files'])} files)")
    lines += ["origin:", *(f"  {line}" for line in origin), f"downloaded: {state}"]
    return "\n".join(lines)
