"""The code in README.md and docs/*.md works as written.

- Every ```python block runs (in a temporary working directory), except a block marked as
  needing a real data set with an HTML comment on the line before it,
  `<!-- needs-data: NAME -->`, where NAME is a registered data-set name
  (`seqlab.data.datasets.names()`, the table of docs/cli.md) that the page names.
- Every `seqlab ...` command line (in shell blocks and inline code) parses with the real
  argument parser (`seqlab.cli.build_parser`); nothing is trained.
- A shell block without a marker runs on the data that ships with seqlab: it reads no
  `../shared/data` path, its input files are written in the block, and its `--run` directories
  are trained (`--out`) earlier on the page.
- README.md's quickstart is what `.ci/run` runs, and the README stays a short front page.
- Relative links between the pages point at files and headings that exist.
"""

import contextlib
import dataclasses
import io
import re
import shlex
from pathlib import Path

import keras
import pytest

from seqlab.cli import DATASETS, build_parser
from seqlab.data import datasets
from seqlab.pipelines import TASKS

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
DATA_SET_TABLE = ROOT / "docs" / "cli.md"
README_MAX_LINES = 300

SHELL_LANGUAGES = {"bash", "sh", "shell", "console"}
MARKER = re.compile(r"<!--\s*needs-data:(?P<name>[^>]*?)\s*-->")
FENCE = re.compile(r"^```(?P<language>[\w+-]*)\s*$")
INLINE_CODE = re.compile(r"(?<!`)`(?!`)([^`]+)`(?!`)")
# Flags whose value is a file or folder that the command reads.
INPUT_FLAGS = {
    "--data", "--src", "--tgt", "--input", "--test-data", "--validation-data", "--config",
}
# The pip quiet flag is the one difference allowed between the README's commands and .ci/run's.
PIP_QUIET = re.compile(r"pip install -q ")


@dataclasses.dataclass
class Block:
    page: Path
    line: int  # 1-based line of the opening fence
    language: str
    code: str
    needs_data: str | None  # the marker's data set name, None without a marker

    @property
    def id(self):
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def read_blocks(page):
    """The fenced code blocks of `page`, each with the needs-data marker right before it."""
    blocks, lines = [], page.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        end = index + 1
        while not lines[end].startswith("```"):
            end += 1
        previous = lines[index - 1].strip() if index else ""
        marker = MARKER.fullmatch(previous)
        blocks.append(Block(
            page=page,
            line=index + 1,
            language=opening["language"],
            code="\n".join(lines[index + 1:end]) + "\n",
            needs_data=marker["name"].strip() if marker else None,
        ))
        index = end + 1
    return blocks


def first_of_each_code(blocks):
    """`blocks` without the repeats of an earlier block's code."""
    firsts = {}
    for block in blocks:
        firsts.setdefault(block.code, block)
    return list(firsts.values())


ALL_BLOCKS = [block for page in PAGES for block in read_blocks(page)]
PYTHON_BLOCKS = [block for block in ALL_BLOCKS if block.language == "python"]
# The README repeats examples of the library guide word for word: each distinct code runs once.
# README's own examples run in tests/test_quiet.py instead, as a user runs them (one script, a
# fresh interpreter, no output on stderr): here they would only run a second time.
README_PYTHON_CODES = {block.code for block in PYTHON_BLOCKS if block.page.name == "README.md"}
DISTINCT_PYTHON_BLOCKS = [block for block in first_of_each_code(PYTHON_BLOCKS)
                          if block.code not in README_PYTHON_CODES]
SHELL_BLOCKS = [block for block in ALL_BLOCKS if block.language in SHELL_LANGUAGES]


def prose(page):
    """The text of `page` outside code blocks and markers."""
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.S | re.M)
    return MARKER.sub("", text)


def data_set_table_names():
    """The names in the first column of the data-set table of docs/cli.md."""
    text = DATA_SET_TABLE.read_text(encoding="utf-8")
    section = text.split("\n## Data sets\n", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `([^`]+)` \|", section, flags=re.M))


def shell_commands(code):
    """The command lines of a shell block: continuations joined, split at `&&`, `;` and `|`."""
    joined = re.sub(r"\\\n\s*", " ", code)
    commands = []
    for line in joined.splitlines():
        tokens = shlex.split(line, comments=True)
        command = []
        for token in tokens + [";"]:
            if token in {"&&", ";", "|", "||"} or token.endswith(";"):
                if token.endswith(";") and token != ";":
                    command.append(token[:-1])
                if command:
                    commands.append(command)
                command = []
            else:
                command.append(token.strip("()"))
    return [command for command in commands if command]


def seqlab_arguments(command):
    """The arguments after `seqlab` (or `python -m seqlab`) in `command`, else None.

    Leading environment assignments (`TF_CONFIG=...`) and `nice -n N` are skipped.
    """
    words = list(command)
    while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0], flags=re.S):
        words.pop(0)
    if words[:1] == ["nice"]:
        words = words[3:] if words[1:2] == ["-n"] else words[1:]
    if words[:1] == ["seqlab"]:
        return words[1:]
    if words[:3] in (["python", "-m", "seqlab"], ["python3", "-m", "seqlab"]):
        return words[3:]
    return None


def documented_seqlab_commands():
    """`(where, arguments)` of every seqlab command line in shell blocks and inline code."""
    found = []
    for block in SHELL_BLOCKS:
        for command in shell_commands(block.code):
            arguments = seqlab_arguments(command)
            if arguments is not None:
                found.append((block.id, arguments))
    for page in PAGES:
        for span in INLINE_CODE.findall(prose(page)):
            span = " ".join(span.split())
            if not span.startswith(("seqlab ", "python -m seqlab ")):
                continue
            if "<" in span or "..." in span:
                continue  # a usage pattern, not a command line
            words = shlex.split(span)
            arguments = seqlab_arguments(words)
            # `seqlab ner` names a task; a command line has an action (or asks for help).
            if arguments is not None and (len(arguments) >= 2 or "--help" in arguments):
                found.append((f"{page.relative_to(ROOT)}: `{span}`", arguments))
    return found


COMMANDS = documented_seqlab_commands()


@pytest.fixture(scope="module")
def parsers():
    """One argument parser per task (and one for `seqlab datasets`), built once."""
    return {task: build_parser(task) for task in TASKS} | {DATASETS: build_parser()}


def test_the_pages_are_there():
    names = {page.name for page in PAGES}
    assert {"README.md", "cli.md", "library.md", "performance.md", "architecture.md"} <= names
    assert PYTHON_BLOCKS and SHELL_BLOCKS and COMMANDS


# Keras warns on every `fit` of a tf.data.Dataset with the default shuffle=True: a user who
# runs the example sees it, so the examples pass shuffle=False.
@pytest.mark.filterwarnings("error:`shuffle=True` was passed")
@pytest.mark.parametrize("block", DISTINCT_PYTHON_BLOCKS, ids=lambda block: block.id)
def test_python_block_runs(block, tmp_path, monkeypatch):
    if block.needs_data is not None:
        pytest.skip(f"needs the data set {block.needs_data}")
    monkeypatch.chdir(tmp_path)
    keras.utils.set_random_seed(0)
    code = compile(block.code, block.id, "exec")
    with contextlib.redirect_stdout(io.StringIO()):
        exec(code, {"__name__": "__docs__"})  # noqa: S102 - the documented code is the test


@pytest.mark.parametrize("block", PYTHON_BLOCKS, ids=lambda block: block.id)
def test_python_blocks_import_seqlab_before_keras_and_tensorflow(block):
    # Importing seqlab first keeps TensorFlow's C++ log (oneDNN, CUDA, XLA lines) off the
    # terminal; an example that imports keras first prints it when run as written.
    imports = [line.split()[1].split(".")[0] for line in block.code.splitlines()
               if line.startswith(("import ", "from "))]
    if "seqlab" in imports:
        first = imports.index("seqlab")
        assert not {"keras", "tensorflow"} & set(imports[:first]), (
            f"{block.id}: imports {', '.join(imports[:first])} before seqlab")


@pytest.mark.parametrize(
    "block", [b for b in ALL_BLOCKS if b.needs_data is not None], ids=lambda block: block.id
)
def test_needs_data_marker_names_a_data_set_of_its_page(block):
    assert block.needs_data in datasets.names(), (
        f"{block.id}: the marker names {block.needs_data!r}, which is not a registered data set "
        f"(seqlab datasets list)"
    )
    assert block.needs_data in prose(block.page), (
        f"{block.id}: the page does not name the data set {block.needs_data!r} outside the marker"
    )


def test_the_data_set_table_lists_every_registered_name():
    assert data_set_table_names() == set(datasets.names()), (
        f"the data-set table of {DATA_SET_TABLE.relative_to(ROOT)} differs from the registry"
    )


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_marker_stands_right_before_a_code_block(page):
    lines = page.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, start=1):
        if "needs-data" in line:
            assert MARKER.fullmatch(line.strip()), f"{page.name}:{number}: malformed marker"
            assert number < len(lines) and FENCE.match(lines[number]), (
                f"{page.name}:{number}: a needs-data marker must be the line before a code block"
            )


@pytest.mark.parametrize("where, arguments", COMMANDS, ids=[where for where, _ in COMMANDS])
def test_seqlab_command_parses(where, arguments, parsers):
    task = next((word for word in arguments if not word.startswith("-")), None)
    if "--help" in arguments:
        # A help line prints the help and exits 0 when every word before it is valid.
        with contextlib.redirect_stdout(io.StringIO()), pytest.raises(SystemExit) as exit_:
            (parsers[task] if task else build_parser()).parse_args(arguments)
        assert exit_.value.code == 0, f"{where}: seqlab {shlex.join(arguments)}"
        return
    assert task in parsers, f"{where}: no task in {arguments}"
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
        try:
            parsed = parsers[task].parse_args(arguments)
        except SystemExit:
            pytest.fail(f"{where}: seqlab {shlex.join(arguments)}\n{stderr.getvalue()}")
    assert getattr(parsed, "action", None), f"{where}: no action in {arguments}"


@pytest.mark.parametrize(
    "block", [b for b in SHELL_BLOCKS if b.needs_data is None], ids=lambda block: block.id
)
def test_unmarked_shell_block_runs_on_the_shipped_data(block):
    assert "../shared" not in block.code, f"{block.id}: reads ../shared without a marker"
    written = set(re.findall(r">\s*(\S+)", block.code))
    trained = set()
    for page_block in SHELL_BLOCKS:
        if page_block.page != block.page or page_block.needs_data is not None:
            continue
        for command in shell_commands(page_block.code):
            arguments = seqlab_arguments(command) or []
            if page_block.line <= block.line and arguments[1:2] == ["train"]:
                trained.update(_flag_values(arguments, "--out"))
    for command in shell_commands(block.code):
        arguments = seqlab_arguments(command)
        if arguments is None:
            continue
        for flag in INPUT_FLAGS:
            for path in _flag_values(arguments, flag):
                assert path in written, f"{block.id}: {flag} {path} is not written in the block"
        for run in _flag_values(arguments, "--run"):
            assert run in trained, f"{block.id}: --run {run} is not trained earlier on the page"


def _flag_values(arguments, flag):
    return [arguments[i + 1] for i, word in enumerate(arguments[:-1]) if word == flag]


def test_unmarked_python_blocks_read_no_shared_data():
    for block in PYTHON_BLOCKS:
        if block.needs_data is None:
            assert "../shared" not in block.code, f"{block.id}: reads ../shared without a marker"


def test_readme_quickstart_is_what_ci_runs():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    ci_commands = [
        PIP_QUIET.sub("pip install ", line.strip().strip("()"))
        for line in ci.splitlines()
        if line.strip().lstrip("(").startswith("python3 -m venv")
    ]
    quickstart = next(
        block for block in read_blocks(README)
        if block.language in SHELL_LANGUAGES and "pip install" in block.code
    )
    readme_commands = [
        line.strip() for line in quickstart.code.splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]
    assert readme_commands == ci_commands


def test_each_quickstart_command_gets_a_fresh_environment_of_its_own():
    quickstart = next(
        block for block in read_blocks(README)
        if block.language in SHELL_LANGUAGES and "pip install" in block.code
    )
    environments = [re.search(r"python3 -m venv (\S+)", line)[1]
                    for line in quickstart.code.splitlines() if "python3 -m venv" in line]
    assert len(environments) == 2 and len(set(environments)) == 2, environments
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    removed = re.search(r"^rm -rf (.+)$", ci, flags=re.M)[1].split()
    ignored = (ROOT / ".gitignore").read_text(encoding="utf-8").split()
    for environment in environments:
        # Removed before the first command runs, so that each command starts from nothing.
        assert environment in removed
        assert ci.index("rm -rf ") < ci.index(f"python3 -m venv {environment} ")
        assert f"{environment}/" in ignored


def test_readme_is_a_short_front_page():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines"
    for page in PAGES[1:]:
        assert f"docs/{page.name}" in README.read_text(encoding="utf-8"), f"no link to {page.name}"


def _anchors(page):
    """GitHub's anchors of the headings of `page`."""
    anchors = set()
    for heading in re.findall(r"^#+ (.+)$", prose(page), flags=re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        anchors.add(slug)
    return anchors


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_relative_links_resolve(page):
    for target in re.findall(r"\]\(([^)\s]+)\)", prose(page)):
        if re.match(r"[a-z]+://", target):
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        assert linked.exists(), f"{page.name}: link to missing {target}"
        if anchor and linked.suffix == ".md":
            assert anchor in _anchors(linked), f"{page.name}: no heading for {target}"


STALE = [
    ("pipelines.decoding", "the samplers are seqlab.models.samplers"),
    ("--min-freq", "ner's flag is --min-count"),
    ("from layers ", "import from seqlab.layers"),
    ("from data.", "import from seqlab.data"),
    ("from pipelines", "import from seqlab.pipelines"),
    ("import layers", "import seqlab.layers"),
]


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_no_stale_names(page):
    text = page.read_text(encoding="utf-8")
    for stale, now in STALE:
        assert stale not in text, f"{page.name} mentions {stale!r}: {now}"
